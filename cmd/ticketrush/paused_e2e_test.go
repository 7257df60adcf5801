package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPausedLineSaysPaused: while a concert's admission is paused a WAITING fan reads paused: true and, as
// estimatedWaitSeconds, an integer as docs/api.md's token body has it (never null): the wait once
// admission resumes, at the concert's rate; once it resumes the fan reads paused: false and is admitted.
func TestPausedLineSaysPaused(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{ActiveCapacity: ptr(1), AdmitPerSecond: ptr(2), Paused: ptr(true)})
	waitOf := func(body []byte) (json.RawMessage, bool) {
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &raw))
		var paused bool
		require.NoError(t, json.Unmarshal(raw["paused"], &paused), "paused is a boolean: %s", body)
		return raw["estimatedWaitSeconds"], paused
	}

	alice, bob := newFan(t, "paused-alice"), newFan(t, "paused-bob")
	var tk ticket
	for i, f := range []fan{alice, newFan(t, "paused-carol"), newFan(t, "paused-dave")} {
		res := s.do(t, req{method: "POST", path: "/v1/concerts/" + concert + "/queue", headers: f.auth("")})
		require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
		joined := decodeTicket(t, res)
		require.Equal(t, "WAITING", joined.Status, "paused: nobody is admitted, even with a free slot")
		wait, paused := waitOf(res.body)
		assert.True(t, paused, "the join says the line is paused: %s", res.body)
		assert.Equal(t, strconv.Itoa((i+2)/2), string(wait), "position %d at 2 a second, once resumed: %s", i+1, res.body)
		if i == 0 {
			tk = joined
		}
	}

	poll := s.do(t, req{method: "GET", path: "/v1/queue", headers: alice.auth(tk.Token)})
	require.Equal(t, http.StatusOK, poll.status, "%s", poll.body)
	wait, paused := waitOf(poll.body)
	assert.True(t, paused, "a poll says the line is paused: %s", poll.body)
	assert.Equal(t, "1", string(wait), "%s", poll.body)
	assert.GreaterOrEqual(t, decodeTicket(t, poll).PollAfterSeconds, int64(1), "still told when to poll again")

	res := s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
		body: map[string]any{"paused": false}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	// Admitted, and this instance's view of the line has seen the resume (it refreshes a few times a
	// second): a poll of the ACTIVE token says paused: false.
	require.Eventually(t, func() bool {
		r, err := s.send(req{method: "GET", path: "/v1/queue", headers: alice.auth(tk.Token)})
		if err != nil || r.status != http.StatusOK {
			return false
		}
		var got ticket
		return json.Unmarshal(r.body, &got) == nil && got.Status == "ACTIVE" && !got.Paused
	}, waitFor, every)

	// Resumed, with the one slot taken: the next fan waits with paused: false and an estimate.
	res = s.do(t, req{method: "POST", path: "/v1/concerts/" + concert + "/queue", headers: bob.auth("")})
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	require.Equal(t, "WAITING", decodeTicket(t, res).Status)
	wait, paused = waitOf(res.body)
	assert.False(t, paused, "%s", res.body)
	var secs int64
	require.NoError(t, json.Unmarshal(wait, &secs), "an estimate once resumed: %s", res.body)
	assert.GreaterOrEqual(t, secs, int64(1))
}
