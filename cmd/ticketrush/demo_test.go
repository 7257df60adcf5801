package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
)

// TestDemoWalkAsPrinted runs what `make run` prints (`ticketrush demo --setup`, which scripts/run.sh
// shows as it is) against a real server: each command line, as printed, in a shell with nothing of the
// test's environment, from a directory holding bin/ticketrush as the repository does after `make build`.
// The walk must reach the receipt, and a second setup must reuse the demo concert.
func TestDemoWalkAsPrinted(t *testing.T) {
	s := startService(t, nil)
	dir, _ := buildBinary(t)
	env := map[string]string{"JWT_SECRET": testJWTSecret, "ADMIN_TOKEN": testAdminToken}
	getenv := func(k string) string { return env[k] }

	var printed bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"demo", "--setup", "--addr", s.url}, getenv, &printed))
	t.Logf("make run prints:\n%s", printed.String())
	concert := regexp.MustCompile(`demo concert (\S+) \(.*, created\)`).FindStringSubmatch(printed.String())
	require.NotNil(t, concert, "the first setup creates the demo concert")

	var again bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"demo", "--setup", "--addr", s.url}, getenv, &again))
	assert.Contains(t, again.String(), "demo concert "+concert[1]+" (", "a second setup reuses the concert")
	assert.Contains(t, again.String(), "already there: reused")
	var list []struct{ ID, Title string }
	require.NoError(t, json.Unmarshal(s.do(t, req{method: "GET", path: "/v1/concerts"}).body, &list))
	require.Len(t, list, 1, "one demo concert after two setups: %+v", list)

	var commands []string
	for _, line := range strings.Split(printed.String(), "\n") {
		if strings.HasPrefix(line, "  ") && strings.Contains(line, "bin/ticketrush") {
			commands = append(commands, strings.TrimSpace(line))
		}
	}
	require.Len(t, commands, 2, "the walk and the token line")

	runPrinted := func(line string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin"} // nothing of the test's environment: the line carries what it needs
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s\n%s", line, out)
		return string(out)
	}

	walk := runPrinted(commands[0])
	t.Logf("%s\n%s", commands[0], walk)
	done := regexp.MustCompile(`done: demo-fan bought (\S+) on (\S+) \(reservation (\S+), payment (\S+)\)`).FindStringSubmatch(walk)
	require.NotNil(t, done, "the walk reaches the receipt")
	for _, step := range []string{"1. join", "2. poll", "3. the concert's dates", "4. the seat map", "5. hold", "6. charge", "7. pay", "8. the receipt"} {
		assert.Contains(t, walk, "\n"+step)
	}
	// The receipt as the service keeps it: the fan's reservation PAID, the payment theirs.
	fan := newFan(t, "demo-fan")
	res := s.do(t, req{method: "GET", path: "/v1/reservations/" + done[3], headers: fan.auth("")})
	require.Equal(t, 200, res.status, "%s", res.body)
	assert.Contains(t, string(res.body), `"status":"PAID"`)
	assert.Contains(t, string(res.body), `"seatId":"`+done[1]+`"`)
	pay := s.do(t, req{method: "GET", path: "/v1/payments/" + done[4], headers: fan.auth("")})
	require.Equal(t, 200, pay.status, "%s", pay.body)
	assert.Contains(t, string(pay.body), `"reservationId":"`+done[3]+`"`)

	jwt := strings.TrimSpace(runPrinted(commands[1]))
	user, err := auth.NewUsers([]byte(testJWTSecret)).Verify(jwt)
	require.NoError(t, err, "the printed token line mints a JWT the service takes")
	assert.Equal(t, "fan-2", user)
}
