package contract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// promise checks one sentence of the contract: when ok is false the test fails with the sentence and
// what the service did instead. It reports ok.
func promise(t testing.TB, sentence string, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf("CONTRACT BROKEN: %s\n        %s", sentence, fmt.Sprintf(format, args...))
	}
	return ok
}

// promiseNow is promise for a check the rest of the test stands on: it stops the test when broken.
func promiseNow(t testing.TB, sentence string, ok bool, format string, args ...any) {
	t.Helper()
	if !promise(t, sentence, ok, format, args...) {
		t.FailNow()
	}
}

// eventually polls cond every interval until it holds (true) or within has passed, then fails with the
// sentence and cond's last word on what it saw (false). A bounded wait for the service, never a sleep
// standing in for one.
func eventually(t testing.TB, sentence string, within, interval time.Duration, cond func() (bool, string)) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, saw := cond()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return promise(t, sentence, false, "not within %v; last seen: %s", within, saw)
		}
		time.Sleep(interval)
	}
}

// reply is one HTTP exchange as the client saw it.
type reply struct {
	call   string // "METHOD path", for messages
	status int
	header http.Header
	body   []byte
}

func (r reply) String() string {
	return fmt.Sprintf("%s → %d %s", r.call, r.status, bytes.TrimSpace(r.body))
}

// do makes one request. body: nil sends none; a string or []byte is sent as it is; anything else as
// JSON. headers are name, value pairs. A transport error stops the test.
func (s *server) do(t testing.TB, method, path string, body any, headers ...string) reply {
	t.Helper()
	r, err := s.try(method, path, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// try is do without a test, for other goroutines.
func (s *server) try(method, path string, body any, headers ...string) (reply, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		return reply{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := s.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return reply{}, fmt.Errorf("read body: %w", err)
	}
	return reply{call: method + " " + path, status: res.StatusCode, header: res.Header, body: b}, nil
}

// admin is the admin bearer header.
func (s *server) admin() []string { return []string{"Authorization", "Bearer " + s.adminToken} }

// fan is one user: a fresh id and a JWT of an hour.
type fan struct {
	id  string
	jwt string
}

func (s *server) newFan(t testing.TB) fan {
	t.Helper()
	id := dbtest.Name("fan")
	return fan{id: id, jwt: s.mint(t, jwt.SigningMethodHS256, s.jwtSecret, jwt.MapClaims{"sub": id, "exp": time.Now().Add(time.Hour).Unix()})}
}

// mint signs claims with key by method.
func (s *server) mint(t testing.TB, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatalf("sign a JWT: %v", err)
	}
	return tok
}

// h is the fan's headers: the bearer JWT, and the queue token when one is given.
func (f fan) h(queueToken string) []string {
	out := []string{"Authorization", "Bearer " + f.jwt}
	if queueToken != "" {
		out = append(out, "X-Queue-Token", queueToken)
	}
	return out
}

// Problem shapes ---------------------------------------------------------------------------------------

const problemShape = "Conventions: every error is RFC 9457 application/problem+json with an extra member code " +
	`({"type":"about:blank","title","status","code","detail"})`

// problemDoc is an RFC 9457 problem with the contract's code member.
type problemDoc struct {
	Type   *string `json:"type"`
	Title  *string `json:"title"`
	Status *int    `json:"status"`
	Code   *string `json:"code"`
	Detail *string `json:"detail"`
}

// expectProblem checks that r is the problem status/code the sentence promises, in the contract's shape.
// It reports whether status and code are the promised ones.
func expectProblem(t testing.TB, sentence string, r reply, status int, code string) bool {
	t.Helper()
	var p problemDoc
	_ = json.Unmarshal(r.body, &p)
	got := ""
	if p.Code != nil {
		got = *p.Code
	}
	if !promise(t, sentence, r.status == status && got == code, "want %d %s; got %s", status, code, r) {
		return false
	}
	promise(t, problemShape, r.header.Get("Content-Type") == "application/problem+json",
		"Content-Type %q on %s", r.header.Get("Content-Type"), r)
	promise(t, problemShape, p.Type != nil && *p.Type == "about:blank" && p.Title != nil && *p.Title != "" &&
		p.Status != nil && *p.Status == status, "members type, title, status: %s", r)
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		promise(t, "Error codes: 429 RATE_LIMITED and 503 UNAVAILABLE come with Retry-After",
			r.header.Get("Retry-After") != "", "no Retry-After on %s", r)
	}
	return true
}

// detail is a problem's detail, "" without one.
func detail(r reply) string {
	var p problemDoc
	if json.Unmarshal(r.body, &p) != nil || p.Detail == nil {
		return ""
	}
	return *p.Detail
}

// expectStatus checks r's status.
func expectStatus(t testing.TB, sentence string, r reply, status int) bool {
	t.Helper()
	return promise(t, sentence, r.status == status, "want %d; got %s", status, r)
}

// decode unmarshals r's JSON body into v; a body that is not JSON of v's shape breaks the sentence.
func decode(t testing.TB, sentence string, r reply, v any) bool {
	t.Helper()
	if !promise(t, sentence, strings.HasPrefix(r.header.Get("Content-Type"), "application/json"),
		"Content-Type %q, want application/json: %s", r.header.Get("Content-Type"), r) {
		return false
	}
	err := json.Unmarshal(r.body, v)
	return promise(t, sentence, err == nil, "body does not decode (%v): %s", err, r)
}

// hasMembers checks that the JSON object r carries every member named (null counts as present).
func hasMembers(t testing.TB, sentence string, r reply, members ...string) bool {
	t.Helper()
	var raw map[string]json.RawMessage
	if !promise(t, sentence, json.Unmarshal(r.body, &raw) == nil, "not a JSON object: %s", r) {
		return false
	}
	var missing []string
	for _, m := range members {
		if _, ok := raw[m]; !ok {
			missing = append(missing, m)
		}
	}
	return promise(t, sentence, len(missing) == 0, "members %v missing: %s", missing, r)
}

// The API's bodies -------------------------------------------------------------------------------------

// ticket is the queue body (Queue).
type ticket struct {
	Token                string     `json:"token"`
	ConcertID            string     `json:"concertId"`
	Status               string     `json:"status"`
	Position             int64      `json:"position"`
	EstimatedWaitSeconds int64      `json:"estimatedWaitSeconds"`
	PollAfterSeconds     int64      `json:"pollAfterSeconds"`
	ActiveUntil          *time.Time `json:"activeUntil"`
	OpensAt              *time.Time `json:"opensAt"`
	DrawKey              *string    `json:"drawKey"`
	SeatsAvailable       int64      `json:"seatsAvailable"`
}

const queueBody = `Queue: queue body {"token","concertId","status","position","estimatedWaitSeconds","pollAfterSeconds","activeUntil","opensAt","drawKey","seatsAvailable"}`

var queueMembers = []string{"token", "concertId", "status", "position", "estimatedWaitSeconds", "pollAfterSeconds",
	"activeUntil", "opensAt", "drawKey", "seatsAvailable"}

// queueIntegers are the queue body's members that are integers whatever the token's state: the
// contract names activeUntil, opensAt and drawKey as the ones that may be null.
var queueIntegers = []string{"position", "estimatedWaitSeconds", "pollAfterSeconds", "seatsAvailable"}

// asTicket decodes a queue body, checking that every member is there and that the integers are
// integers (a null would decode to 0 unseen).
func asTicket(t testing.TB, r reply) ticket {
	t.Helper()
	var tk ticket
	if decode(t, queueBody, r, &tk) && hasMembers(t, queueBody, r, queueMembers...) {
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(r.body, &raw)
		for _, m := range queueIntegers {
			var n int64
			promise(t, queueBody+": "+m+" is an integer", json.Unmarshal(raw[m], &n) == nil && string(raw[m]) != "null",
				"%s is %s: %s", m, raw[m], r)
		}
	}
	return tk
}

// join is POST /v1/concerts/{id}/queue with an optional body; it returns the reply.
func (s *server) join(t testing.TB, f fan, concertID string, body any) reply {
	t.Helper()
	return s.do(t, "POST", "/v1/concerts/"+concertID+"/queue", body, f.h("")...)
}

// mustJoin joins and requires 200 or 201 with a queue body.
func (s *server) mustJoin(t testing.TB, f fan, concertID string) ticket {
	t.Helper()
	r := s.join(t, f, concertID, nil)
	promiseNow(t, "Queue: POST /v1/concerts/{concertId}/queue → 201 new token, 200 the caller's existing PREQUEUE/WAITING/ACTIVE token",
		r.status == http.StatusCreated || r.status == http.StatusOK, "got %s", r)
	return asTicket(t, r)
}

// poll is GET /v1/queue with the token.
func (s *server) poll(t testing.TB, f fan, token string) reply {
	t.Helper()
	return s.do(t, "GET", "/v1/queue", nil, f.h(token)...)
}

// mustPoll polls and requires 200 with a queue body.
func (s *server) mustPoll(t testing.TB, f fan, token string) ticket {
	t.Helper()
	r := s.poll(t, f, token)
	promiseNow(t, "Queue: GET /v1/queue (X-Queue-Token) → 200 for any genuine token, whatever its status",
		r.status == http.StatusOK, "got %s", r)
	return asTicket(t, r)
}

// waitStatus polls the token every 250 ms (4 calls a second: well inside the fan's rate limit) until it
// reads one of want, and returns the last body.
func (s *server) waitStatus(t testing.TB, sentence string, f fan, token string, within time.Duration, want ...string) (ticket, bool) {
	t.Helper()
	var last ticket
	ok := eventually(t, sentence, within, 250*time.Millisecond, func() (bool, string) {
		r, err := s.try("GET", "/v1/queue", nil, f.h(token)...)
		if err != nil {
			return false, err.Error()
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &last) != nil {
			return false, r.String()
		}
		for _, w := range want {
			if last.Status == w {
				return true, ""
			}
		}
		return false, r.String()
	})
	return last, ok
}

// concertSpec is what createConcert sends; zero fields take the defaults below.
type concertSpec struct {
	Seats     int            // seats of section R per schedule (default 10)
	Price     int64          // price of an R seat (default 1000)
	Schedules int            // how many schedules (default 1)
	Queue     map[string]any // queue settings, nil for none
	Sale      map[string]any // the sale, nil for none
}

// concert is the admin create reply.
type concert struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Venue     string `json:"venue"`
	Schedules []struct {
		ID       string    `json:"id"`
		StartsAt time.Time `json:"startsAt"`
	} `json:"schedules"`
	Queue map[string]any `json:"queue"`
}

// createConcert creates a concert through the admin API; it requires 201.
func (s *server) createConcert(t testing.TB, spec concertSpec) concert {
	t.Helper()
	if spec.Seats == 0 {
		spec.Seats = 10
	}
	if spec.Price == 0 {
		spec.Price = 1000
	}
	if spec.Schedules == 0 {
		spec.Schedules = 1
	}
	var starts []string
	for i := range spec.Schedules {
		starts = append(starts, time.Date(2026, 12, 24+i, 10, 0, 0, 0, time.UTC).Format(time.RFC3339))
	}
	body := map[string]any{
		"title": "Contract " + t.Name(), "venue": "Contract Hall", "schedules": starts,
		"sections": []map[string]any{{"name": "R", "price": spec.Price, "seats": spec.Seats}},
	}
	if spec.Queue != nil {
		body["queue"] = spec.Queue
	}
	if spec.Sale != nil {
		body["sale"] = spec.Sale
	}
	r := s.do(t, "POST", "/admin/v1/concerts", body, s.admin()...)
	promiseNow(t, "Admin: POST /admin/v1/concerts → 201", r.status == http.StatusCreated, "got %s", r)
	var c concert
	promiseNow(t, "Admin: POST /admin/v1/concerts → 201 {id,title,venue,schedules:[{id,startsAt}],queue}",
		json.Unmarshal(r.body, &c) == nil && c.ID != "" && len(c.Schedules) == spec.Schedules, "got %s", r)
	return c
}

// admitted joins a concert with room and waits until the fan is ACTIVE; it returns the token.
func (s *server) admitted(t testing.TB, f fan, concertID string) string {
	t.Helper()
	tk := s.mustJoin(t, f, concertID)
	if tk.Status != "ACTIVE" {
		s.waitStatus(t, "Queue: a join finds the user ACTIVE at once when nobody waits and there is room", f, tk.Token, 20*time.Second, "ACTIVE")
	}
	return tk.Token
}

// queueState is the admin view of a concert's line.
type queueState struct {
	Waiting        int64      `json:"waiting"`
	Active         int64      `json:"active"`
	ActiveCapacity int64      `json:"activeCapacity"`
	AdmitPerSecond int64      `json:"admitPerSecond"`
	Paused         bool       `json:"paused"`
	Prequeue       int64      `json:"prequeue"`
	OpensAt        *time.Time `json:"opensAt"`
	SoldOut        bool       `json:"soldOut"`
	Abandoned      int64      `json:"abandoned"`
	Seats          struct {
		Available int64 `json:"available"`
		Held      int64 `json:"held"`
		Sold      int64 `json:"sold"`
	} `json:"seats"`
}

func (s *server) queueState(t testing.TB, concertID string) (queueState, reply) {
	t.Helper()
	r := s.do(t, "GET", "/admin/v1/concerts/"+concertID+"/queue", nil, s.admin()...)
	var q queueState
	if expectStatus(t, "Admin: GET /admin/v1/concerts/{concertId}/queue → 200", r, http.StatusOK) {
		decode(t, "Admin: GET /admin/v1/concerts/{concertId}/queue → 200 {waiting,active,...}", r, &q)
	}
	return q, r
}

// seat is one entry of a seat map.
type seat struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	Price   int64  `json:"price"`
	Status  string `json:"status"`
}

// seats is the seat map of a schedule, read with an ACTIVE token.
func (s *server) seats(t testing.TB, f fan, token, concertID, scheduleID string) map[string]seat {
	t.Helper()
	r := s.do(t, "GET", "/v1/concerts/"+concertID+"/schedules/"+scheduleID+"/seats", nil, f.h(token)...)
	var list []seat
	if !expectStatus(t, "Catalog: GET /v1/concerts/{concertId}/schedules/{scheduleId}/seats → 200", r, http.StatusOK) ||
		!decode(t, `Catalog: seats [{"id","section","price","status"}]`, r, &list) {
		return nil
	}
	out := map[string]seat{}
	for _, st := range list {
		out[st.ID] = st
	}
	return out
}

// reservation is the reservation body.
type reservation struct {
	ID         string    `json:"id"`
	Status     string    `json:"status"`
	ConcertID  string    `json:"concertId"`
	ScheduleID string    `json:"scheduleId"`
	SeatID     string    `json:"seatId"`
	Price      int64     `json:"price"`
	ExpiresAt  time.Time `json:"expiresAt"`
	CreatedAt  time.Time `json:"createdAt"`
}

// hold is POST /v1/reservations.
func (s *server) hold(t testing.TB, f fan, token, scheduleID, seatID string) reply {
	t.Helper()
	return s.do(t, "POST", "/v1/reservations", map[string]any{"scheduleId": scheduleID, "seatId": seatID}, f.h(token)...)
}

// mustHold holds a seat and requires 201.
func (s *server) mustHold(t testing.TB, f fan, token, scheduleID, seatID string) reservation {
	t.Helper()
	r := s.hold(t, f, token, scheduleID, seatID)
	var res reservation
	promiseNow(t, "Reservations: POST /v1/reservations (gated) {scheduleId,seatId} → 201 reservation",
		r.status == http.StatusCreated && json.Unmarshal(r.body, &res) == nil, "got %s", r)
	return res
}

// charge is POST /v1/points/charges.
func (s *server) charge(t testing.TB, f fan, amount any, headers ...string) reply {
	t.Helper()
	return s.do(t, "POST", "/v1/points/charges", map[string]any{"amount": amount}, append(f.h(""), headers...)...)
}

// balance is GET /v1/points. A test that has just spent the fan's rate limit reads it as a client is
// told to: after the 429's Retry-After (a 429 does nothing, so the read is simply made again).
func (s *server) balance(t testing.TB, f fan) int64 {
	t.Helper()
	r := s.do(t, "GET", "/v1/points", nil, f.h("")...)
	for i := 0; i < 5 && r.status == http.StatusTooManyRequests; i++ {
		wait, _ := strconv.Atoi(r.header.Get("Retry-After"))
		time.Sleep(time.Duration(max(wait, 1)) * time.Second)
		r = s.do(t, "GET", "/v1/points", nil, f.h("")...)
	}
	var b struct {
		Balance *int64 `json:"balance"`
	}
	promiseNow(t, `Points: GET /v1/points → 200 {"balance"}`, r.status == http.StatusOK && json.Unmarshal(r.body, &b) == nil && b.Balance != nil,
		"got %s", r)
	return *b.Balance
}

// Event streams -----------------------------------------------------------------------------------------

// event is one Server-Sent Event of GET /v1/queue/events, with when it arrived.
type event struct {
	name string
	data string
	at   time.Time
}

// events is an open event stream: its events arrive on ch, which closes when the server ends the stream
// (end says when, and err why, if the read failed).
type events struct {
	opened time.Time
	status int
	header http.Header
	body   []byte // the refusal, when status is not 200
	ch     chan event
	end    time.Time
	err    error
	cancel context.CancelFunc
}

// openEvents opens GET /v1/queue/events for the token; the stream is closed at the end of the test.
func (s *server) openEvents(t testing.TB, f fan, token string) *events {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/queue/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	for h := f.h(token); len(h) > 1; h = h[2:] {
		req.Header.Set(h[0], h[1])
	}
	req.Header.Set("Accept", "text/event-stream")
	e := &events{opened: time.Now(), ch: make(chan event, 64), cancel: cancel}
	res, err := s.stream.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/queue/events: %v", err)
	}
	e.status, e.header = res.StatusCode, res.Header
	if res.StatusCode != http.StatusOK {
		e.body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		close(e.ch)
		return e
	}
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var cur event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.name != "" || cur.data != "" {
					cur.at = time.Now()
					e.ch <- cur
				}
				cur = event{}
			case strings.HasPrefix(line, "event:"):
				cur.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				cur.data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			}
		}
		e.err = sc.Err()
		e.end = time.Now()
		close(e.ch)
	}()
	return e
}

// next waits up to within for the stream's next event; ok is false when the stream ended (closed) and
// timedOut true when nothing came in time.
func (e *events) next(within time.Duration) (ev event, ok, timedOut bool) {
	select {
	case ev, ok = <-e.ch:
		return ev, ok, false
	case <-time.After(within):
		return event{}, true, true
	}
}

// ticketOf decodes a status event's data.
func ticketOf(t testing.TB, ev event) ticket {
	t.Helper()
	var tk ticket
	promise(t, "Queue: GET /v1/queue/events: the same body as GET /v1/queue as Server-Sent Events (event: status)",
		ev.name == "status" && json.Unmarshal([]byte(ev.data), &tk) == nil && tk.Status != "",
		"event %q data %q", ev.name, ev.data)
	return tk
}

// onCluster reports whether the suite runs on a Redis Cluster (make test's second pass).
func onCluster(t testing.TB) bool { t.Helper(); return dbtest.OnCluster(t) }

// waitPlace polls the token until it reads status at position pos. Polls are answered from the
// instance's view of the line, refreshed a few times a second, so a place just after an admission or a
// leave is checked once the view has had time to catch up (5 s, many refreshes), not at the first read.
func (s *server) waitPlace(t testing.TB, sentence string, f fan, token, status string, pos int64) bool {
	t.Helper()
	return eventually(t, sentence, 5*time.Second, 250*time.Millisecond, func() (bool, string) {
		r, err := s.try("GET", "/v1/queue", nil, f.h(token)...)
		if err != nil {
			return false, err.Error()
		}
		var tk ticket
		_ = json.Unmarshal(r.body, &tk)
		return r.status == http.StatusOK && tk.Status == status && tk.Position == pos, r.String()
	})
}
