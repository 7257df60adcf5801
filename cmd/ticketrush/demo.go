package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/config"
)

var demoHelp = help{"ticketrush demo [--addr URL] [--user U] [--setup]", `Walks one fan from joining the line to the receipt against the service at --addr, printing every
request as the curl line that makes it (with its body) and every answer: join, poll until ACTIVE,
schedules, seat map, hold the first free seat, charge its price in points, pay, read the payment.
Signs the fan's JWT with JWT_SECRET. Uses the demo concert, creating it (with ADMIN_TOKEN) when the
service has none; --setup only does that and prints how to walk, which is what "make run" shows.`}

// The demo concert: found by title and venue, so that every run of `make run` reuses it.
const (
	demoTitle = "IU 2026 (demo)"
	demoVenue = "KSPO Dome"
	demoBody  = `{"title":"IU 2026 (demo)","venue":"KSPO Dome","schedules":["2026-12-24T10:00:00Z","2026-12-25T10:00:00Z"],` +
		`"sections":[{"name":"VIP","price":165000,"seats":100},{"name":"R","price":143000,"seats":400}]}`
)

func demo(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	addr := fs.String("addr", defaultAddr(getenv), "base URL of the running service; the default follows HTTP_ADDR")
	user := fs.String("user", "demo-fan", "the fan's user id")
	setup := fs.Bool("setup", false, "only make sure the demo concert exists and print how to walk it")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the fan to be admitted")
	if ok, err := parse(fs, args, stdout, demoHelp); !ok {
		return err
	}
	secret, err := config.JWTSecret(getenv)
	if err != nil {
		return err
	}
	c := &demoClient{base: strings.TrimRight(*addr, "/"), http: &http.Client{Timeout: 15 * time.Second}, out: stdout}
	concert, created, err := c.demoConcert(ctx, getenv("ADMIN_TOKEN"))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if *setup {
		return printWalk(stdout, c.base, concert, created, string(secret))
	}
	jwt, err := auth.Mint(secret, *user, time.Hour, time.Now())
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := c.walk(ctx, concert, jwt, *user, *wait); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// defaultAddr is the URL of HTTP_ADDR as a client on this machine reaches it.
func defaultAddr(getenv func(string) string) string {
	a := getenv("HTTP_ADDR")
	switch {
	case a == "":
		a = "127.0.0.1:8080"
	case strings.HasPrefix(a, ":"):
		a = "127.0.0.1" + a
	}
	return "http://" + a
}

// printWalk is what `make run` prints once the service is ready: the lines run as printed.
func printWalk(w io.Writer, base, concert string, created bool, secret string) error {
	how := "already there: reused"
	if created {
		how = "created"
	}
	_, err := fmt.Fprintf(w, `ticketrush is running at %[1]s
demo concert %[2]s (%[3]q, %[4]s)

walk one fan from join to receipt (join, admission, seat map, hold, points, payment, receipt),
printing every request with its body and every answer:
  JWT_SECRET=%[5]s bin/ticketrush demo --addr %[1]s

a JWT for another user, for your own curl calls ("Authorization: Bearer <JWT>", valid 1 h):
  JWT_SECRET=%[5]s bin/ticketrush token --user fan-2
`, base, concert, demoTitle, how, shellQuote(secret))
	return err
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

type demoClient struct {
	base string
	http *http.Client
	out  io.Writer
}

// demoConcert returns the id of the demo concert, creating it when the service has none.
func (c *demoClient) demoConcert(ctx context.Context, adminToken string) (string, bool, error) {
	if _, err := c.call(ctx, "GET", "/readyz", nil, nil, nil, false); err != nil {
		return "", false, fmt.Errorf("the service is not ready: %w", err)
	}
	var list []struct{ ID, Title, Venue string }
	if _, err := c.call(ctx, "GET", "/v1/concerts", nil, nil, &list, false); err != nil {
		return "", false, err
	}
	for _, k := range list {
		if k.Title == demoTitle && k.Venue == demoVenue {
			return k.ID, false, nil
		}
	}
	if adminToken == "" {
		return "", false, errors.New("the service has no demo concert and ADMIN_TOKEN is not set to create one")
	}
	var made struct{ ID string }
	if _, err := c.call(ctx, "POST", "/admin/v1/concerts", []string{"Authorization", "Bearer " + adminToken},
		json.RawMessage(demoBody), &made, false); err != nil {
		return "", false, fmt.Errorf("create the demo concert: %w", err)
	}
	return made.ID, true, nil
}

// walk takes one fan from join to receipt, printing each step.
func (c *demoClient) walk(ctx context.Context, concert, jwt, user string, wait time.Duration) error {
	fmt.Fprintf(c.out, "fan %s at %s, demo concert %s; each request is shown as the curl line that makes it (set JWT and QT as printed to run one yourself):\n  JWT=%s\n", user, c.base, concert, jwt)
	qt, err := c.admitted(ctx, concert, jwt, wait)
	if err != nil {
		return err
	}
	schedule, seat, err := c.freeSeat(ctx, concert, jwt, qt)
	if err != nil {
		return err
	}
	hold, payment, err := c.buy(ctx, jwt, qt, schedule, seat)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "\ndone: %s bought %s on %s (reservation %s, payment %s)\n", user, seat, schedule, hold, payment)
	return err
}

// The headers of the walk's requests, as its curl lines show them: the fan's JWT, and with it the
// queue token on the gated ones.
var (
	demoBearer = []string{"Authorization", "Bearer $JWT"}
	demoGated  = []string{"Authorization", "Bearer $JWT", "X-Queue-Token", "$QT"}
)

// step prints the heading of the walk's step n.
func (c *demoClient) step(n int, what string) { fmt.Fprintf(c.out, "\n%d. %s\n", n, what) }

// demoTicket is the waiting room's answer to a join or a poll.
type demoTicket struct {
	Token            string
	Status           string
	Position         int64
	PollAfterSeconds int64
}

// admitted joins the line of concert and polls it until the fan is ACTIVE, within wait, and returns
// the fan's queue token.
func (c *demoClient) admitted(ctx context.Context, concert, jwt string, wait time.Duration) (string, error) {
	c.step(1, "join the line")
	var t demoTicket
	if _, err := c.show(ctx, "POST", "/v1/concerts/"+concert+"/queue", demoBearer, jwt, "", nil, &t); err != nil {
		return "", err
	}
	fmt.Fprintf(c.out, "  QT=%s\n", t.Token)

	c.step(2, "poll the line until the fan is ACTIVE (admitted)")
	deadline := time.Now().Add(wait)
	for {
		if _, err := c.show(ctx, "GET", "/v1/queue", demoGated, jwt, t.Token, nil, &t); err != nil {
			return "", err
		}
		if t.Status == "ACTIVE" {
			return t.Token, nil
		}
		if t.Status != "WAITING" {
			return "", fmt.Errorf("the queue token is %s, not WAITING or ACTIVE", t.Status)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("not admitted within %s (position %d)", wait, t.Position)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Duration(max(t.PollAfterSeconds, 1)) * time.Second):
		}
	}
}

// freeSeat finds the first date of concert with free seats and the first AVAILABLE seat on its map.
func (c *demoClient) freeSeat(ctx context.Context, concert, jwt, qt string) (schedule, seat string, err error) {
	c.step(3, "the concert's dates, with free seats")
	var schedules []struct {
		ID             string
		AvailableSeats int64
	}
	if _, err := c.show(ctx, "GET", "/v1/concerts/"+concert+"/schedules", demoGated, jwt, qt, nil, &schedules); err != nil {
		return "", "", err
	}
	for _, s := range schedules {
		if s.AvailableSeats > 0 {
			schedule = s.ID
			break
		}
	}
	if schedule == "" {
		return "", "", errors.New("every date of the demo concert is sold out")
	}

	c.step(4, "the seat map of date "+schedule+" (shortened here)")
	var seats []struct{ ID, Status string }
	if _, err := c.show(ctx, "GET", "/v1/concerts/"+concert+"/schedules/"+schedule+"/seats", demoGated, jwt, qt, nil, &seats); err != nil {
		return "", "", err
	}
	for _, s := range seats {
		if s.Status == "AVAILABLE" {
			seat = s.ID
			break
		}
	}
	if seat == "" {
		return "", "", errors.New("no AVAILABLE seat on " + schedule)
	}
	return schedule, seat, nil
}

// buy holds seat on schedule, charges its price in points, pays the hold and checks the receipt: the
// payment, and the reservation PAID. It returns the reservation's and the payment's ids.
func (c *demoClient) buy(ctx context.Context, jwt, qt, schedule, seat string) (reservation, payment string, err error) {
	c.step(5, "hold seat "+seat)
	var hold struct {
		ID    string
		Price int64
	}
	if _, err := c.show(ctx, "POST", "/v1/reservations", demoGated, jwt, qt,
		map[string]string{"scheduleId": schedule, "seatId": seat}, &hold); err != nil {
		return "", "", err
	}

	c.step(6, "charge the seat's price in points")
	if _, err := c.show(ctx, "POST", "/v1/points/charges", demoBearer, jwt, "", map[string]int64{"amount": hold.Price}, nil); err != nil {
		return "", "", err
	}

	c.step(7, "pay the hold from the points")
	var paid struct{ ID string }
	if _, err := c.show(ctx, "POST", "/v1/payments", demoBearer, jwt, "", map[string]string{"reservationId": hold.ID}, &paid); err != nil {
		return "", "", err
	}

	c.step(8, "the receipt: the payment, and the reservation now PAID")
	if _, err := c.show(ctx, "GET", "/v1/payments/"+paid.ID, demoBearer, jwt, "", nil, nil); err != nil {
		return "", "", err
	}
	var res struct{ Status string }
	if _, err := c.show(ctx, "GET", "/v1/reservations/"+hold.ID, demoBearer, jwt, "", nil, &res); err != nil {
		return "", "", err
	}
	if res.Status != "PAID" {
		return "", "", fmt.Errorf("reservation %s is %s after payment, not PAID", hold.ID, res.Status)
	}
	return hold.ID, paid.ID, nil
}

// show prints a request as the curl line that makes it, makes it with $JWT and $QT replaced, and prints
// the answer (a long one shortened).
func (c *demoClient) show(ctx context.Context, method, path string, headers []string, jwt, qt string, body, into any) (int, error) {
	var line strings.Builder
	fmt.Fprintf(&line, "  curl -sS")
	if method != "GET" {
		fmt.Fprintf(&line, " -X %s", method)
	}
	fmt.Fprintf(&line, " %s%s", c.base, path)
	real := make([]string, len(headers))
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&line, ` -H "%s: %s"`, headers[i], headers[i+1])
		real[i] = headers[i]
		real[i+1] = strings.NewReplacer("$JWT", jwt, "$QT", qt).Replace(headers[i+1])
	}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(&line, " -H 'Content-Type: application/json' -d '%s'", b)
		body = json.RawMessage(b)
	}
	fmt.Fprintln(c.out, line.String())
	return c.call(ctx, method, path, real, body, into, true)
}

// call makes one request, decodes a 2xx answer into into (when not nil) and, when echo is set, prints
// the status and the body. An answer that is not 2xx is an error that carries its body.
func (c *demoClient) call(ctx context.Context, method, path string, headers []string, body, into any, echo bool) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	got, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return res.StatusCode, err
	}
	got = bytes.TrimSpace(got)
	if echo {
		shown := got
		if len(shown) > 300 {
			shown = append(append([]byte(nil), shown[:300]...), fmt.Sprintf("... (%d bytes)", len(got))...)
		}
		fmt.Fprintf(c.out, "  → %d %s\n", res.StatusCode, shown)
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, got)
	}
	if into != nil {
		if err := json.Unmarshal(got, into); err != nil {
			return res.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return res.StatusCode, nil
}
