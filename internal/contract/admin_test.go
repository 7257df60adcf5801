package contract

import (
	"fmt"
	"testing"
	"time"
)

// adminSection checks docs/api.md "Admin".
func adminSection(t *testing.T, s *server) {
	t.Run("CreateWithDefaults", func(t *testing.T) {
		t.Parallel()
		const sentence = "Admin: POST /admin/v1/concerts → 201 {id,title,venue,schedules:[{id,startsAt}],queue}; queue fields are optional with those defaults"
		r := s.do(t, "POST", "/admin/v1/concerts", map[string]any{
			"title": "IU 2026", "venue": "KSPO Dome", "schedules": []string{"2026-12-24T10:00:00Z", "2026-12-25T10:00:00Z"},
			"sections": []map[string]any{{"name": "VIP", "price": 165000, "seats": 2}, {"name": "R", "price": 143000, "seats": 3}},
		}, s.admin()...)
		var c concert
		if !expectStatus(t, sentence, r, 201) || !decode(t, sentence, r, &c) {
			t.FailNow()
		}
		hasMembers(t, sentence, r, "id", "title", "venue", "schedules", "queue")
		promise(t, sentence, c.ID != "" && c.Title == "IU 2026" && c.Venue == "KSPO Dome" && len(c.Schedules) == 2 &&
			c.Schedules[0].ID != "" && c.Schedules[0].StartsAt.Equal(time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)), "%s", r)
		defaults := map[string]any{"activeCapacity": 1000.0, "admitPerSecond": 50.0, "activeTtlSeconds": 1800.0, "holdTtlSeconds": 300.0,
			"maxHoldsPerUser": 4.0, "activePerSeat": 0.0, "abandonAfterSeconds": 300.0, "noShowSeconds": 120.0, "joinPowBits": 0.0,
			"accessCodeRequired": false}
		for k, want := range defaults {
			promise(t, sentence+" (default "+k+")", c.Queue[k] == want, "queue.%s = %v, want %v: %s", k, c.Queue[k], want, r)
		}

		// Every schedule gets every section's seats, ids <section>-<n> from 1.
		f := s.newFan(t)
		tok := s.admitted(t, f, c.ID)
		for _, sc := range c.Schedules {
			seats := s.seats(t, f, tok, c.ID, sc.ID)
			want := map[string]int64{"VIP-1": 165000, "VIP-2": 165000, "R-1": 143000, "R-2": 143000, "R-3": 143000}
			ok := len(seats) == len(want)
			for id, price := range want {
				ok = ok && seats[id].Price == price && seats[id].Status == "AVAILABLE"
			}
			promise(t, "Admin: every schedule gets every section's seats, ids <section>-<n> from 1", ok, "schedule %s: %v", sc.ID, seats)
		}

		q, qr := s.queueState(t, c.ID)
		const view = `Admin: GET /admin/v1/concerts/{concertId}/queue → {"waiting","active","activeCapacity","admitPerSecond","paused","prequeue","opensAt","soldOut","abandoned","seats":{"available","held","sold"}}`
		hasMembers(t, view, qr, "waiting", "active", "activeCapacity", "admitPerSecond", "paused", "prequeue", "opensAt", "soldOut", "abandoned", "seats")
		promise(t, view, q.Active == 1 && q.Waiting == 0 && q.ActiveCapacity == 1000 && q.AdmitPerSecond == 50 && !q.Paused &&
			q.OpensAt == nil && !q.SoldOut && q.Seats.Available == 10 && q.Seats.Held == 0 && q.Seats.Sold == 0, "%s", qr)
		r = s.do(t, "GET", "/admin/v1/concerts/no-such-concert/queue", nil, s.admin()...)
		expectProblem(t, "Admin: GET /admin/v1/concerts/{concertId}/queue of an unknown concert: 404 NOT_FOUND", r, 404, "NOT_FOUND")
	})

	t.Run("Patch", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{})
		const sentence = "Admin: PATCH /admin/v1/concerts/{concertId}/queue → 200 the new settings"
		r := s.do(t, "PATCH", "/admin/v1/concerts/"+c.ID+"/queue", map[string]any{"activeCapacity": 7, "admitPerSecond": 3, "paused": true,
			"activePerSeat": 2, "abandonAfterSeconds": 40, "noShowSeconds": 50, "joinPowBits": 1, "accessCodeRequired": true}, s.admin()...)
		var got map[string]any
		if expectStatus(t, sentence, r, 200) && decode(t, sentence, r, &got) {
			want := map[string]any{"activeCapacity": 7.0, "admitPerSecond": 3.0, "paused": true, "activePerSeat": 2.0,
				"abandonAfterSeconds": 40.0, "noShowSeconds": 50.0, "joinPowBits": 1.0, "accessCodeRequired": true}
			for k, v := range want {
				promise(t, sentence+" ("+k+")", got[k] == v, "%s = %v, want %v: %s", k, got[k], v, r)
			}
		}
		q, qr := s.queueState(t, c.ID)
		promise(t, "Admin: PATCH ... in force within a second on every instance (GET .../queue shows it)",
			q.ActiveCapacity == 7 && q.AdmitPerSecond == 3 && q.Paused, "%s", qr)
		r = s.do(t, "PATCH", "/admin/v1/concerts/"+c.ID+"/queue", map[string]any{"activeCapacity": 0}, s.admin()...)
		expectProblem(t, "Admin: PATCH with an activeCapacity out of range: 400 INVALID_REQUEST", r, 400, "INVALID_REQUEST")
		r = s.do(t, "PATCH", "/admin/v1/concerts/"+c.ID+"/queue", map[string]any{"holdTtlSeconds": 5}, s.admin()...)
		expectProblem(t, "Admin: PATCH takes only the fields listed (unknown fields: 400)", r, 400, "INVALID_REQUEST")
	})

	t.Run("Paused", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Queue: map[string]any{"paused": true}})
		a, b := s.newFan(t), s.newFan(t)
		at, bt := s.mustJoin(t, a, c.ID), s.mustJoin(t, b, c.ID)
		promise(t, "Admin: paused: nobody is admitted; joins still queue", at.Status == "WAITING" && at.Position == 1 &&
			bt.Status == "WAITING" && bt.Position == 2, "first %+v, second %+v", at, bt)
		// Admission ticks several times a second: the paused line must admit nobody over 1.5 s of them.
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			if tk := s.mustPoll(t, a, at.Token); !promise(t, "Admin: paused: nobody is admitted", tk.Status == "WAITING", "paused line, first fan: %+v", tk) {
				break
			}
		}
		r := s.do(t, "PATCH", "/admin/v1/concerts/"+c.ID+"/queue", map[string]any{"paused": false}, s.admin()...)
		expectStatus(t, "Admin: PATCH .../queue {paused:false} → 200", r, 200)
		s.waitStatus(t, "Admin: PATCH ... in force within a second (unpaused: the line is admitted)", a, at.Token, 20*time.Second, "ACTIVE")
		s.waitStatus(t, "Admin: PATCH ... in force within a second (unpaused: the line is admitted)", b, bt.Token, 20*time.Second, "ACTIVE")
	})

	t.Run("LineShards", func(t *testing.T) {
		t.Parallel()
		const (
			setting = "Admin (v3): queue.lineShards (optional, 1-1024): how many slots the concert's line is spread over; returned with the other queue settings and fixed once the concert is created"
			order   = "Queue (v3): with lineShards > 1 admission is still FIFO by arrival; position counts the fans ahead across every shard"
		)
		c := s.createConcert(t, concertSpec{Queue: map[string]any{"lineShards": 8, "activeCapacity": 1, "admitPerSecond": 1000}})
		promise(t, setting+" (the create's reply)", c.Queue["lineShards"] == 8.0, "queue: %v", c.Queue)
		_, qr := s.queueState(t, c.ID)
		var q map[string]any
		if decode(t, setting, qr, &q) {
			promise(t, setting+" (GET .../queue)", q["lineShards"] == 8.0, "%s", qr)
		}
		def := s.createConcert(t, concertSpec{})
		n, _ := def.Queue["lineShards"].(float64)
		promise(t, "Admin (v3): lineShards has a default (1 on a single Redis, documented on a cluster)", n >= 1 && n <= 1024, "queue: %v", def.Queue)
		for _, bad := range []any{0, 1025, "8"} {
			r := s.do(t, "POST", "/admin/v1/concerts", map[string]any{"title": "Shards", "venue": "Hall", "schedules": []string{"2027-01-01T00:00:00Z"},
				"sections": []map[string]any{{"name": "R", "price": 1000, "seats": 1}}, "queue": map[string]any{"lineShards": bad}}, s.admin()...)
			expectProblem(t, fmt.Sprintf("Admin (v3): lineShards %v: 400 INVALID_REQUEST", bad), r, 400, "INVALID_REQUEST")
		}
		r := s.do(t, "PATCH", "/admin/v1/concerts/"+c.ID+"/queue", map[string]any{"lineShards": 2}, s.admin()...)
		expectProblem(t, setting+" (a PATCH of it: 400)", r, 400, "INVALID_REQUEST")

		// Eight fans over eight shards: each joins behind the ones before, and the line is admitted in the
		// order of arrival as each admitted fan leaves.
		fans := make([]fan, 8)
		tokens := make([]string, 8)
		for i := range fans {
			fans[i] = s.newFan(t)
			tk := s.mustJoin(t, fans[i], c.ID)
			tokens[i] = tk.Token
			if i == 0 {
				promise(t, "Queue: a join finds the user ACTIVE at once when nobody waits and there is room", tk.Status == "ACTIVE", "%+v", tk)
				continue
			}
			promise(t, order+" (position at the join)", tk.Status == "WAITING" && tk.Position == int64(i), "fan %d: %+v", i, tk)
		}
		for i := 1; i < len(fans); i++ {
			expectStatus(t, "Queue: DELETE /v1/queue → 204", s.do(t, "DELETE", "/v1/queue", nil, fans[i-1].h(tokens[i-1])...), 204)
			if _, ok := s.waitStatus(t, order, fans[i], tokens[i], 20*time.Second, "ACTIVE"); !ok {
				break
			}
			if i+1 < len(fans) {
				s.waitPlace(t, order+" (the next is first in line)", fans[i+1], tokens[i+1], "WAITING", 1)
			}
		}
	})

	t.Run("Limits", func(t *testing.T) {
		t.Parallel()
		const sentence = "Admin: limits: at most 100 schedules, 50 sections, 200,000 seats per schedule and 1,000,000 seats per concert (400 INVALID_REQUEST beyond)"
		var starts []string
		for i := range 101 {
			starts = append(starts, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Hour).Format(time.RFC3339))
		}
		var sections []map[string]any
		for i := range 51 {
			sections = append(sections, map[string]any{"name": fmt.Sprintf("S%d", i), "price": 1000, "seats": 1})
		}
		for _, tt := range []struct {
			name      string
			schedules []string
			sections  []map[string]any
		}{
			{"101 schedules", starts, []map[string]any{{"name": "R", "price": 1000, "seats": 1}}},
			{"51 sections", starts[:1], sections},
			{"200,001 seats per schedule", starts[:1], []map[string]any{{"name": "R", "price": 1000, "seats": 200_000}, {"name": "S", "price": 1000, "seats": 1}}},
			{"1,000,001+ seats per concert", starts[:6], []map[string]any{{"name": "R", "price": 1000, "seats": 200_000}}},
		} {
			r := s.do(t, "POST", "/admin/v1/concerts", map[string]any{"title": "Limits", "venue": "Hall", "schedules": tt.schedules,
				"sections": tt.sections}, s.admin()...)
			expectProblem(t, sentence+" ("+tt.name+")", r, 400, "INVALID_REQUEST")
		}
	})

	t.Run("AccessCodes", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{})
		const sentence = `Admin: POST /admin/v1/concerts/{concertId}/access-codes {"count"} (1-100,000) → 201 {"codes":[...]}: new single-use codes`
		r := s.do(t, "POST", "/admin/v1/concerts/"+c.ID+"/access-codes", map[string]any{"count": 3}, s.admin()...)
		var got struct {
			Codes []string `json:"codes"`
		}
		if expectStatus(t, sentence, r, 201) && decode(t, sentence, r, &got) {
			distinct := map[string]bool{}
			for _, code := range got.Codes {
				distinct[code] = code != ""
			}
			promise(t, sentence, len(got.Codes) == 3 && len(distinct) == 3 && !distinct[""], "%s", r)
		}
		for _, n := range []int{0, 100_001} {
			r := s.do(t, "POST", "/admin/v1/concerts/"+c.ID+"/access-codes", map[string]any{"count": n}, s.admin()...)
			expectProblem(t, fmt.Sprintf("%s (count %d: 400)", sentence, n), r, 400, "INVALID_REQUEST")
		}
	})
}

// concertBody is a small valid create body with the given queue settings.
func concertBody(queue map[string]any) map[string]any {
	return map[string]any{"title": "Contract", "venue": "Hall", "schedules": []string{"2026-12-24T10:00:00Z"},
		"sections": []map[string]any{{"name": "R", "price": 1000, "seats": 2}}, "queue": queue}
}
