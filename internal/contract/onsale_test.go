package contract

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// drawBody is GET /v1/concerts/{concertId}/draw.
type drawBody struct {
	ConcertID       string     `json:"concertId"`
	Status          string     `json:"status"`
	PrequeueOpensAt *time.Time `json:"prequeueOpensAt"`
	OpensAt         *time.Time `json:"opensAt"`
	Commitment      *string    `json:"commitment"`
	Seed            *string    `json:"seed"`
	Entrants        *int       `json:"entrants"`
	EntrantsDigest  *string    `json:"entrantsDigest"`
	DrawnAt         *time.Time `json:"drawnAt"`
}

const drawShape = `On-sale: GET /v1/concerts/{concertId}/draw (public, no auth) → 200 {"concertId","status","prequeueOpensAt","opensAt","commitment","seed","entrants","entrantsDigest","drawnAt"}`

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// draw reads the public draw.
func (s *server) draw(t testing.TB, concertID string) (drawBody, reply) {
	t.Helper()
	r := s.do(t, "GET", "/v1/concerts/"+concertID+"/draw", nil)
	var d drawBody
	if expectStatus(t, drawShape, r, 200) && decode(t, drawShape, r, &d) {
		hasMembers(t, drawShape, r, "concertId", "status", "prequeueOpensAt", "opensAt", "commitment", "seed", "entrants", "entrantsDigest", "drawnAt")
	}
	return d, r
}

// waitDraw polls the public draw (3 a second: the public endpoints' limit is per client address, which
// every test of the suite shares) until it reads status.
func (s *server) waitDraw(t testing.TB, sentence, concertID, status string, within time.Duration) {
	t.Helper()
	eventually(t, sentence, within, 300*time.Millisecond, func() (bool, string) {
		r, err := s.try("GET", "/v1/concerts/"+concertID+"/draw", nil)
		if err != nil {
			return false, err.Error()
		}
		var d drawBody
		_ = json.Unmarshal(r.body, &d)
		return d.Status == status, r.String()
	})
}

// drawKey is the draw key of docs/api.md "On-sale: a pre-queue and a draw anyone can check": lowercase hex
// HMAC-SHA256(key = seed bytes, message = "<concertId>:<userId>").
func drawKey(seed []byte, concertID, userID string) string {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(concertID + ":" + userID))
	return hex.EncodeToString(m.Sum(nil))
}

// onSale checks docs/api.md "On-sale: a pre-queue and a draw anyone can check".
func onSale(t *testing.T, s *server) {
	t.Run("NoSale", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{})
		r := s.do(t, "GET", "/v1/concerts/"+c.ID+"/draw", nil)
		expectProblem(t, "On-sale: GET .../draw: 404 NOT_FOUND for a concert without sale", r, 404, "NOT_FOUND")
	})
	t.Run("PrequeueAndDraw", func(t *testing.T) { t.Parallel(); prequeueAndDraw(t, s) })
	t.Run("PrequeueOpenAtCreation", func(t *testing.T) {
		// docs/api.md "Admin": a sale.prequeueOpensAt not after opensAt and already past opens the
		// pre-queue at once.
		t.Parallel()
		now := time.Now().UTC()
		r := s.do(t, "POST", "/admin/v1/concerts", map[string]any{"title": "Contract " + t.Name(), "venue": "Hall",
			"schedules": []string{"2026-12-24T10:00:00Z"}, "sections": []map[string]any{{"name": "R", "price": 1000, "seats": 10}},
			"sale": map[string]any{"opensAt": now.Add(time.Hour).Format(time.RFC3339), "prequeueOpensAt": now.Add(-time.Minute).Format(time.RFC3339)}},
			s.admin()...)
		var c struct {
			ID string `json:"id"`
		}
		if !expectStatus(t, "Admin: POST /admin/v1/concerts → 201 (a sale whose pre-queue opened a minute ago)", r, 201) || !decode(t, "Admin: POST /admin/v1/concerts → 201", r, &c) {
			return
		}
		d, _ := s.draw(t, c.ID)
		promiseNow(t, "On-sale: OPEN while the pre-queue is open", d.Status == "OPEN", "%+v", d)
		f := s.newFan(t)
		jr := s.join(t, f, c.ID, nil)
		tk := asTicket(t, jr)
		promiseNow(t, "On-sale: fans who join between prequeueOpensAt and opensAt are in the pre-queue (201, status PREQUEUE)",
			jr.status == 201 && tk.Status == "PREQUEUE", "%s", jr)
	})
}

func prequeueAndDraw(t *testing.T, s *server) {
	const (
		keepsWorking = "On-sale: a pre-queue token keeps working after the draw (the poll may hand back a fresh token in token; both work)"
		nullDrawKey  = "Queue: drawKey: the fan's draw key once the pre-queue they joined has been drawn, else null (a fan who joined after opensAt joined no pre-queue)"
	)
	start := time.Now()
	pq, opens := start.Add(3*time.Second).UTC().Truncate(time.Millisecond), start.Add(9*time.Second).UTC().Truncate(time.Millisecond)
	c := s.createConcert(t, concertSpec{Queue: map[string]any{"activeCapacity": 2},
		Sale: map[string]any{"opensAt": opens.Format(time.RFC3339Nano), "prequeueOpensAt": pq.Format(time.RFC3339Nano)}})

	// Before the pre-queue opens. On a machine so slow that the create took until then, these checks
	// would be about a later moment than they mean; they are left out with a note instead.
	if time.Until(pq) > 500*time.Millisecond {
		d, r := s.draw(t, c.ID)
		promise(t, "On-sale: PENDING before the pre-queue opens (commitment null); fields not yet known are null",
			d.Status == "PENDING" && d.ConcertID == c.ID && d.Commitment == nil && d.Seed == nil && d.Entrants == nil &&
				d.EntrantsDigest == nil && d.DrawnAt == nil && d.OpensAt != nil && d.OpensAt.Equal(opens) &&
				d.PrequeueOpensAt != nil && d.PrequeueOpensAt.Equal(pq), "%s", r)
		r = s.join(t, s.newFan(t), c.ID, nil)
		if expectProblem(t, "On-sale: a join before prequeueOpensAt is 409 SALE_NOT_OPEN", r, 409, "SALE_NOT_OPEN") {
			var times struct {
				OpensAt         *time.Time `json:"opensAt"`
				PrequeueOpensAt *time.Time `json:"prequeueOpensAt"`
			}
			_ = json.Unmarshal(r.body, &times)
			promise(t, "On-sale: SALE_NOT_OPEN: the problem body carries opensAt and prequeueOpensAt",
				times.OpensAt != nil && times.OpensAt.Equal(opens) && times.PrequeueOpensAt != nil && times.PrequeueOpensAt.Equal(pq), "%s", r)
		}
	} else {
		t.Logf("the create took until %v before the pre-queue opened: PENDING and SALE_NOT_OPEN not checked", time.Until(pq))
	}
	r := s.do(t, "GET", "/v1/concerts/"+c.ID+"/draw/keys", nil)
	expectProblem(t, "On-sale: GET .../draw/keys: 409 DRAW_NOT_READY before the draw", r, 409, "DRAW_NOT_READY")

	s.waitDraw(t, "On-sale: OPEN while the pre-queue is open", c.ID, "OPEN", time.Until(pq)+30*time.Second)
	d, dr := s.draw(t, c.ID)
	promiseNow(t, "On-sale: when the pre-queue opens the service publishes its commitment, the lowercase hex SHA-256 of the seed; the seed is secret until the draw",
		d.Status == "OPEN" && d.Commitment != nil && hex64.MatchString(*d.Commitment) && d.Seed == nil, "%s", dr)
	commitment := *d.Commitment

	entrants := []fan{s.newFan(t), s.newFan(t), s.newFan(t)}
	tokens := map[string]string{}
	for _, f := range entrants {
		r := s.join(t, f, c.ID, nil)
		tk := asTicket(t, r)
		promiseNow(t, "On-sale: fans who join between prequeueOpensAt and opensAt are in the pre-queue (201, status PREQUEUE)",
			r.status == 201 && tk.Status == "PREQUEUE", "%s", r)
		promise(t, "On-sale: in the pre-queue: position 0, opensAt set; drawKey null until the draw",
			tk.Position == 0 && tk.OpensAt != nil && tk.OpensAt.Equal(opens) && tk.DrawKey == nil, "%s", r)
		tokens[f.id] = tk.Token
	}
	// An entrant's stream, opened on the PREQUEUE token before the opening and held across the draw.
	held := entrants[2]
	pre := s.openEvents(t, held, tokens[held.id])
	promiseNow(t, "Queue: GET /v1/queue/events with a PREQUEUE token → 200", pre.status == 200, "got %d %s", pre.status, pre.body)
	if e, open, late := pre.next(5 * time.Second); open && !late {
		promise(t, "Queue: the event stream: the status at once (PREQUEUE)", ticketOf(t, e).Status == "PREQUEUE", "event %s", e.data)
	} else {
		promiseNow(t, "Queue: the event stream: the status at once", false, "open %v, late %v", open, late)
	}
	again := s.join(t, entrants[0], c.ID, nil)
	promise(t, "Queue: 200 the caller's existing PREQUEUE token", again.status == 200 && asTicket(t, again).Token == tokens[entrants[0].id], "%s", again)
	q, qr := s.queueState(t, c.ID)
	promise(t, "Admin: GET .../queue: prequeue: fans in the pre-queue; opensAt", q.Prequeue == 3 && q.OpensAt != nil && q.OpensAt.Equal(opens), "%s", qr)
	r = s.do(t, "GET", "/v1/concerts/"+c.ID+"/draw/keys", nil)
	expectProblem(t, "On-sale: GET .../draw/keys: 409 DRAW_NOT_READY before the draw (pre-queue open)", r, 409, "DRAW_NOT_READY")

	s.waitDraw(t, "On-sale: at opensAt the pre-queue is drawn (DRAWN)", c.ID, "DRAWN", time.Until(opens)+30*time.Second)
	d, dr = s.draw(t, c.ID)
	promiseNow(t, "On-sale: DRAWN after: seed as hex, entrants the count, entrantsDigest, drawnAt",
		d.Status == "DRAWN" && d.Seed != nil && hex64.MatchString(*d.Seed) && d.Entrants != nil && d.EntrantsDigest != nil && d.DrawnAt != nil, "%s", dr)
	seed, _ := hex.DecodeString(*d.Seed)
	sum := sha256.Sum256(seed)
	promise(t, "On-sale: a fan checks SHA-256(seed) = commitment", hex.EncodeToString(sum[:]) == commitment, "seed %s, commitment %s", *d.Seed, commitment)
	promise(t, "On-sale: entrants the count", *d.Entrants == 3, "%s", dr)

	kr := s.do(t, "GET", "/v1/concerts/"+c.ID+"/draw/keys", nil)
	const keysSentence = "On-sale: GET .../draw/keys (public) → 200 text/plain: every entrant's draw key in draw order, one per line"
	promiseNow(t, keysSentence, kr.status == 200 && strings.HasPrefix(kr.header.Get("Content-Type"), "text/plain"), "%s (Content-Type %q)", kr, kr.header.Get("Content-Type"))
	keys := strings.Split(strings.TrimSuffix(string(kr.body), "\n"), "\n")
	promise(t, keysSentence+"; the list is sorted and has entrants lines", len(keys) == *d.Entrants && sort.StringsAreSorted(keys), "keys %q", keys)
	var digestInput strings.Builder
	for _, k := range keys {
		digestInput.WriteString(k + "\n")
	}
	dsum := sha256.Sum256([]byte(digestInput.String()))
	promise(t, "On-sale: entrantsDigest is the hex SHA-256 of the sorted keys each followed by \\n", hex.EncodeToString(dsum[:]) == *d.EntrantsDigest,
		"digest of the list %x, entrantsDigest %s", dsum, *d.EntrantsDigest)

	// Each entrant's key is the HMAC of their id and is in the list; places follow the keys: the two
	// smallest are admitted (activeCapacity 2), the third waits first in line.
	byKey := slices.Clone(entrants)
	sort.Slice(byKey, func(i, j int) bool { return drawKey(seed, c.ID, byKey[i].id) < drawKey(seed, c.ID, byKey[j].id) })
	for _, f := range entrants {
		k := drawKey(seed, c.ID, f.id)
		promise(t, "On-sale: each entrant's draw key is lowercase hex HMAC-SHA256(seed, <concertId>:<userId>), and is in the list",
			slices.Contains(keys, k), "fan %s's key %s not in %q", f.id, k, keys)
	}
	first, second, third := byKey[0], byKey[1], byKey[2]
	s.waitStatus(t, "On-sale: entrants are placed by ascending draw key (the smallest admitted first)", first, tokens[first.id], 20*time.Second, "ACTIVE")
	s.waitStatus(t, "On-sale: entrants are placed by ascending draw key", second, tokens[second.id], 20*time.Second, "ACTIVE")
	s.waitPlace(t, "On-sale: entrants are placed by ascending draw key: the largest key waits first in line (capacity 2)",
		third, tokens[third.id], "WAITING", 1)
	for _, f := range entrants {
		tk := s.mustPoll(t, f, tokens[f.id])
		promise(t, "Queue: drawKey: the fan's draw key (hex) once the pre-queue they joined has been drawn",
			tk.DrawKey != nil && *tk.DrawKey == drawKey(seed, c.ID, f.id), "fan %s: %+v", f.id, tk)
	}

	// The stream opened before the draw carries the entrant's place (WAITING or ACTIVE) and stays open.
	placed := ""
	for deadline := time.Now().Add(20 * time.Second); placed == "" && time.Now().Before(deadline); {
		e, open, late := pre.next(time.Until(deadline))
		if !open || late {
			promise(t, "Queue: a stream has no deadline of its own: it lasts until a final status (a PREQUEUE stream held across the draw)",
				open, "the stream ended %.1f s after it opened, before the draw's place", pre.end.Sub(pre.opened).Seconds())
			break
		}
		if st := ticketOf(t, e).Status; st != "PREQUEUE" {
			placed = st
		}
	}
	promise(t, "Queue: the event stream sends the status on every change of status (a PREQUEUE stream held across the draw)",
		placed == "WAITING" || placed == "ACTIVE", "the entrant's stream after the draw: %q", placed)

	// A fan who joins after opensAt queues behind every entrant and has no draw key.
	late := s.newFan(t)
	lt := s.mustJoin(t, late, c.ID)
	promise(t, "On-sale: everyone who joins after opensAt queues behind the entrants", lt.Status == "WAITING", "late fan %+v", lt)
	s.waitPlace(t, "On-sale: everyone who joins after opensAt queues FIFO behind the entrants (2 admitted, 1 entrant waiting: place 2)",
		late, lt.Token, "WAITING", 2)
	promise(t, nullDrawKey+" (WAITING)", lt.DrawKey == nil, "late fan WAITING: drawKey %q", deref(lt.DrawKey))

	// The token the first entrant joined with works for every call.
	old := tokens[first.id]
	pr := s.poll(t, first, old)
	fresh := ""
	if expectStatus(t, keepsWorking+" (GET /v1/queue)", pr, 200) {
		fresh = asTicket(t, pr).Token
	}
	ev := s.openEvents(t, first, old)
	if promise(t, keepsWorking+" (GET /v1/queue/events)", ev.status == 200, "got %d %s", ev.status, ev.body) {
		e, open, late := ev.next(5 * time.Second)
		promise(t, keepsWorking+" (GET /v1/queue/events: the status at once)", open && !late && ticketOf(t, e).Status != "", "event %q open %v", e.data, open)
		// The first event comes from the instance's view, which may trail the admission by a refresh;
		// a change of status is sent as an event, so ACTIVE follows at once if it did not lead.
		for deadline := time.Now().Add(5 * time.Second); open && !late && ticketOf(t, e).Status != "ACTIVE" && time.Now().Before(deadline); {
			t.Logf("the old token's stream opened with %s; waiting for ACTIVE", e.data)
			e, open, late = ev.next(time.Until(deadline))
		}
		promise(t, keepsWorking+" (GET /v1/queue/events: the entrant's ACTIVE status)", open && !late && ticketOf(t, e).Status == "ACTIVE", "event %q open %v", e.data, open)
	}
	ev.cancel()
	sc := c.Schedules[0].ID
	expectStatus(t, keepsWorking+" (GET /v1/concerts/{concertId}/schedules)", s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules", nil, first.h(old)...), 200)
	expectStatus(t, keepsWorking+" (GET .../schedules/{scheduleId}/seats)", s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules/"+sc+"/seats", nil, first.h(old)...), 200)
	expectStatus(t, keepsWorking+" (POST /v1/reservations)", s.hold(t, first, old, sc, "R-1"), 201)
	if fresh != "" && fresh != old {
		expectStatus(t, keepsWorking+" (the fresh token: GET .../schedules)", s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules", nil, first.h(fresh)...), 200)
		expectStatus(t, keepsWorking+" (the fresh token: POST /v1/reservations)", s.hold(t, first, fresh, sc, "R-2"), 201)
	}

	// The first two entrants leave (with the tokens they joined with): the third, then the late fan,
	// are admitted; the late fan still has no draw key.
	expectStatus(t, keepsWorking+" (DELETE /v1/queue)", s.do(t, "DELETE", "/v1/queue", nil, first.h(old)...), 204)
	s.waitStatus(t, "Queue: DELETE gives back the active slot: the next in line is admitted", third, tokens[third.id], 20*time.Second, "ACTIVE")
	expectStatus(t, keepsWorking+" (DELETE /v1/queue)", s.do(t, "DELETE", "/v1/queue", nil, second.h(tokens[second.id])...), 204)
	ltNow, _ := s.waitStatus(t, "Queue: DELETE gives back the active slot: the next in line is admitted", late, lt.Token, 20*time.Second, "ACTIVE")
	promise(t, nullDrawKey+" (ACTIVE)", ltNow.DrawKey == nil, "late fan ACTIVE: drawKey %q", deref(ltNow.DrawKey))
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
