package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drawBody is GET /v1/concerts/{id}/draw.
type drawBody struct {
	ConcertID       string     `json:"concertId"`
	Status          string     `json:"status"`
	PrequeueOpensAt time.Time  `json:"prequeueOpensAt"`
	OpensAt         time.Time  `json:"opensAt"`
	Commitment      *string    `json:"commitment"`
	Seed            *string    `json:"seed"`
	Entrants        *int       `json:"entrants"`
	EntrantsDigest  *string    `json:"entrantsDigest"`
	DrawnAt         *time.Time `json:"drawnAt"`
}

func (s *service) draw(t testing.TB, concertID string) drawBody {
	t.Helper()
	res := s.do(t, req{method: "GET", path: "/v1/concerts/" + concertID + "/draw"})
	require.Equal(t, http.StatusOK, res.status, "draw: %s", res.body)
	var d drawBody
	dec := json.NewDecoder(bytes.NewReader(res.body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&d), "draw body %s", res.body)
	return d
}

func (s *service) drawStatus(concertID string) string {
	res, err := s.send(req{method: "GET", path: "/v1/concerts/" + concertID + "/draw"})
	if err != nil || res.status != http.StatusOK {
		return ""
	}
	var d drawBody
	if json.Unmarshal(res.body, &d) != nil {
		return ""
	}
	return d.Status
}

// createSaleConcert creates a paused concert whose pre-queue opens at pq and sale at opens.
func (s *service) createSaleConcert(t testing.TB, pq, opens time.Time, paused bool) (string, []byte) {
	t.Helper()
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": "On-sale " + t.Name(), "venue": "Test Hall", "schedules": []string{"2026-12-24T10:00:00Z"},
		"sections": []map[string]any{{"name": "R", "price": 1000, "seats": 10}},
		"queue":    map[string]any{"paused": paused},
		"sale":     map[string]any{"opensAt": opens.UTC().Format(time.RFC3339Nano), "prequeueOpensAt": pq.UTC().Format(time.RFC3339Nano)},
	}})
	require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
	var c struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	return c.ID, res.body
}

// drawKeyOf is docs/api.md's draw key, computed here from its definition.
func drawKeyOf(seed []byte, concertID, userID string) string {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(concertID + ":" + userID))
	return hex.EncodeToString(m.Sum(nil))
}

// TestOnSaleEndToEnd walks a sale through the real server: a join before the pre-queue is refused with
// both times, 50 fans gather in the pre-queue, the opening draws them, and everything a fan can check
// checks out: the seed against the commitment published before the first join, each fan's place
// against their HMAC key's rank, a late fan behind all 50, the keys file and its digest, verify-draw
// (and verify-draw failing on a tampered keys file). The seed shows nowhere before the draw.
func TestOnSaleEndToEnd(t *testing.T) {
	s := startService(t, nil)
	start := time.Now()
	pq, opens := start.Add(2*time.Second), start.Add(8*time.Second)
	id, created := s.createSaleConcert(t, pq, opens, true)
	var seen [][]byte // every body the API gave before the draw, to look for the seed in
	seen = append(seen, created)

	d := s.draw(t, id)
	assert.Equal(t, "PENDING", d.Status)
	assert.Nil(t, d.Commitment)
	assert.Nil(t, d.Seed)

	early := newFan(t, "early-fan")
	res := s.do(t, req{method: "POST", path: "/v1/concerts/" + id + "/queue", headers: early.auth("")})
	requireProblem(t, res, http.StatusConflict, "SALE_NOT_OPEN")
	var times struct {
		OpensAt         time.Time `json:"opensAt"`
		PrequeueOpensAt time.Time `json:"prequeueOpensAt"`
	}
	require.NoError(t, json.Unmarshal(res.body, &times))
	assert.True(t, times.OpensAt.Equal(opens.Truncate(time.Millisecond)), "opensAt %v", times.OpensAt)
	assert.True(t, times.PrequeueOpensAt.Equal(pq.Truncate(time.Millisecond)), "prequeueOpensAt %v", times.PrequeueOpensAt)
	seen = append(seen, res.body)

	require.Eventually(t, func() bool { return s.drawStatus(id) == "OPEN" }, 30*time.Second, 50*time.Millisecond)
	d = s.draw(t, id)
	require.NotNil(t, d.Commitment)
	commitment := *d.Commitment
	assert.Nil(t, d.Seed, "the seed is secret until the draw")

	const n = 50
	fans := make([]fan, n)
	tokens := map[string]string{}
	for i := range fans {
		fans[i] = newFan(t, fmt.Sprintf("fan-%02d", i))
		status, tk := s.join(t, fans[i], id)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, "PREQUEUE", tk.Status, "fan %d joined inside the pre-queue window", i)
		assert.Zero(t, tk.Position)
		require.NotNil(t, tk.OpensAt)
		assert.True(t, tk.OpensAt.Equal(opens.Truncate(time.Millisecond)))
		assert.Nil(t, tk.DrawKey)
		assert.Greater(t, tk.PollAfterSeconds, int64(0))
		tokens[fans[i].id] = tk.Token
	}
	again := s.do(t, req{method: "POST", path: "/v1/concerts/" + id + "/queue", headers: fans[3].auth("")})
	require.Equal(t, http.StatusOK, again.status, "a rejoin in the pre-queue: %s", again.body)
	assert.Equal(t, tokens[fans[3].id], decodeTicket(t, again).Token, "the same token on rejoin")
	seen = append(seen, again.body)
	adminRes := s.do(t, req{method: "GET", path: "/admin/v1/concerts/" + id + "/queue", headers: admin()})
	require.Equal(t, http.StatusOK, adminRes.status)
	var adminQueue struct {
		Prequeue int64      `json:"prequeue"`
		OpensAt  *time.Time `json:"opensAt"`
		Waiting  int64      `json:"waiting"`
	}
	require.NoError(t, json.Unmarshal(adminRes.body, &adminQueue))
	assert.EqualValues(t, n, adminQueue.Prequeue, "the admin figures count the pre-queue")
	require.NotNil(t, adminQueue.OpensAt)
	assert.Zero(t, adminQueue.Waiting)
	seen = append(seen, adminRes.body)
	polled := s.poll(t, fans[7], tokens[fans[7].id])
	assert.Equal(t, "PREQUEUE", polled.Status)
	// A gated call before the draw: the entrant is not active yet, like a WAITING fan (403, not 410).
	requireProblem(t, s.do(t, req{method: "GET", path: "/v1/concerts/" + id + "/schedules", headers: fans[7].auth(tokens[fans[7].id])}),
		http.StatusForbidden, "QUEUE_NOT_ACTIVE")
	metricsBefore := s.do(t, req{method: "GET", path: "/metrics"})
	seen = append(seen, metricsBefore.body)

	require.Eventually(t, func() bool { return s.drawStatus(id) == "DRAWN" }, 60*time.Second, 50*time.Millisecond)
	logsBefore := s.logs.String()
	d = s.draw(t, id)
	require.NotNil(t, d.Seed)
	seed, err := hex.DecodeString(*d.Seed)
	require.NoError(t, err)
	require.Len(t, seed, 32)
	sum := sha256.Sum256(seed)
	assert.Equal(t, commitment, hex.EncodeToString(sum[:]), "the seed hashes to the commitment published before the first join")
	require.NotNil(t, d.Entrants)
	assert.Equal(t, n, *d.Entrants)

	for i, body := range seen {
		assert.NotContains(t, string(body), *d.Seed, "body %d shown before the draw carries the seed", i)
	}
	assert.NotContains(t, logsBefore, *d.Seed, "the logs carry the seed before the draw")

	late := newFan(t, "late-fan")
	_, lateTicket := s.join(t, late, id)
	require.Equal(t, "WAITING", lateTicket.Status)
	assert.Nil(t, lateTicket.DrawKey, "a fan who joined after the opening was never drawn: no draw key")

	// Every fan's place is their key's rank, computed here from the seed and their id.
	keys := make([]string, n)
	rank := map[string]int{}
	for i, f := range fans {
		keys[i] = drawKeyOf(seed, id, f.id)
	}
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	for i, k := range sorted {
		rank[k] = i + 1
	}
	for i, f := range fans {
		tk := s.poll(t, f, tokens[f.id])
		require.Equal(t, "WAITING", tk.Status, "fan %s after the draw", f.id)
		assert.Equal(t, int64(rank[keys[i]]), tk.Position, "fan %s's place is their key's rank", f.id)
		require.NotNil(t, tk.DrawKey)
		assert.Equal(t, keys[i], *tk.DrawKey)
		// The fresh token of the place works too, and says the same.
		fresh := s.poll(t, f, tk.Token)
		assert.Equal(t, tk.Position, fresh.Position)
	}
	lateNow := s.poll(t, late, lateTicket.Token)
	assert.Equal(t, int64(n+1), lateNow.Position, "a fan who joined after the opening is behind all %d", n)
	assert.Nil(t, lateNow.DrawKey, "a fan who joined after the opening was never drawn: no draw key")

	// The keys file and its digest.
	res = s.do(t, req{method: "GET", path: "/v1/concerts/" + id + "/draw/keys"})
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, strings.Join(sorted, "\n")+"\n", string(res.body))
	fileSum := sha256.Sum256(res.body)
	require.NotNil(t, d.EntrantsDigest)
	assert.Equal(t, *d.EntrantsDigest, hex.EncodeToString(fileSum[:]))

	// verify-draw passes against the service, and fails on a tampered keys file.
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"verify-draw", "--addr", s.url, "--concert", id, "--user", fans[0].id},
		func(string) string { return "" }, &out), out.String())
	assert.Contains(t, out.String(), fmt.Sprintf("place %d of %d", rank[keys[0]], n))
	tampered := strings.Split(strings.TrimSuffix(string(res.body), "\n"), "\n")
	tampered[0], tampered[1] = tampered[1], tampered[0]
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/keys") {
			io.WriteString(w, strings.Join(tampered, "\n")+"\n")
			return
		}
		up, err := http.Get(s.url + r.URL.Path)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer up.Body.Close()
		io.Copy(w, up.Body)
	}))
	defer proxy.Close()
	out.Reset()
	err = run(context.Background(), []string{"verify-draw", "--addr", proxy.URL, "--concert", id}, func(string) string { return "" }, &out)
	require.Error(t, err, "verify-draw passed a tampered keys file:\n%s", out.String())
	assert.Contains(t, out.String(), "FAIL")

	// Admission, once resumed, takes the entrants in draw order and then the late fan, each once.
	res = s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + id + "/queue", headers: admin(), body: map[string]any{"paused": false}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Eventually(t, func() bool { return s.status(late, lateTicket.Token) == "ACTIVE" }, 60*time.Second, 50*time.Millisecond)
	for _, f := range fans {
		assert.Equal(t, "ACTIVE", s.status(f, tokens[f.id]), "fan %s", f.id)
	}
	assert.Equal(t, int64(n+1), s.queueState(t, id).Active)
	lateNow = s.poll(t, late, lateTicket.Token)
	require.Equal(t, "ACTIVE", lateNow.Status)
	assert.Nil(t, lateNow.DrawKey, "an ACTIVE fan who joined after the opening was never drawn: no draw key")

	// "A pre-queue token keeps working after the draw (both work)": the token an entrant joined with
	// serves every call a token serves, gated ones too: dates, seat map, a hold, the event stream.
	for i, f := range fans[:3] {
		old := tokens[f.id]
		res := s.do(t, req{method: "GET", path: "/v1/concerts/" + id + "/schedules", headers: f.auth(old)})
		require.Equal(t, http.StatusOK, res.status, "schedules with the pre-queue token of ACTIVE %s: %s", f.id, res.body)
		var schedules []struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(res.body, &schedules))
		require.Len(t, schedules, 1)
		s.seatMap(t, f, old, id, schedules[0].ID) // 200, or it fails
		h := s.hold(t, f, old, schedules[0].ID, fmt.Sprintf("R-%d", i+1))
		require.Equal(t, http.StatusCreated, h.status, "a hold with the pre-queue token of ACTIVE %s: %s", f.id, h.body)
		first, ok := next(t, s.stream(t, f, old), 10*time.Second)
		require.True(t, ok)
		assert.Equal(t, "ACTIVE", first.Status, "the event stream of the pre-queue token")
	}
}

// TestOnSaleJoinsRacingTheOpening sends hundreds of joins around the opening, with the scheduler's
// drawer racing them: each fan ends up an entrant or a post-opening arrival, exactly once, and the
// line holds each of them once, entrants first.
func TestOnSaleJoinsRacingTheOpening(t *testing.T) {
	s := startService(t, nil)
	now := time.Now()
	pq, opens := now.Add(1500*time.Millisecond), now.Add(4*time.Second)
	id, _ := s.createSaleConcert(t, pq, opens, true)
	require.Eventually(t, func() bool { return s.drawStatus(id) == "OPEN" }, 30*time.Second, 20*time.Millisecond)

	const n = 300
	fans := make([]fan, n)
	for i := range fans {
		fans[i] = newFan(t, fmt.Sprintf("racer-%03d", i))
	}
	// Start the joins shortly before the opening, so they straddle it.
	for time.Until(opens) > 150*time.Millisecond {
		time.Sleep(10 * time.Millisecond) // pacing the test's own start, not synchronising with the service
	}
	tickets := make([]ticket, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range fans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, tk, err := s.tryJoin(fans[i], id)
			if err != nil {
				errs <- err
				return
			}
			tickets[i] = tk
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	entrants, arrivals := 0, 0
	for i, tk := range tickets {
		switch tk.Status {
		case "PREQUEUE":
			entrants++
		case "WAITING":
			arrivals++
		default:
			t.Fatalf("fan %d: status %s", i, tk.Status)
		}
	}
	t.Logf("%d entrants, %d post-opening arrivals", entrants, arrivals)
	require.Eventually(t, func() bool { return s.drawStatus(id) == "DRAWN" }, 60*time.Second, 20*time.Millisecond)
	d := s.draw(t, id)
	require.NotNil(t, d.Entrants)
	assert.Equal(t, entrants, *d.Entrants, "every PREQUEUE answer is an entrant of the draw, and only those")

	positions := map[int64]string{}
	for i, f := range fans {
		tk := s.poll(t, f, tickets[i].Token)
		require.Equal(t, "WAITING", tk.Status, "fan %d", i)
		if other, dup := positions[tk.Position]; dup {
			t.Fatalf("fans %s and %s share position %d", other, f.id, tk.Position)
		}
		positions[tk.Position] = f.id
		if tickets[i].Status == "PREQUEUE" {
			assert.LessOrEqual(t, tk.Position, int64(entrants), "entrant %d is placed among the entrants", i)
		} else {
			assert.Greater(t, tk.Position, int64(entrants), "arrival %d is behind every entrant", i)
		}
	}
	assert.Len(t, positions, n, "every fan holds one place")
	for p := int64(1); p <= n; p++ {
		assert.Contains(t, positions, p, "nobody at position %d", p)
	}
	assert.Equal(t, int64(n), s.queueState(t, id).Waiting)
}
