package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
)

// contention is the plan of the contended holds: rounds of attempts attempts each on seats fresh
// seats (one schedule a round), so that every round has the shape of an on-sale, about
// 1 - seats/attempts of the attempts refused. Request i of the run is in round i / attempts.
//
// Each worker is one fan at a time, who holds until they have won per seats (the concert's
// maxHoldsPerUser) and then hands over to the next fan of the pool: a fan's requests never overlap, so
// no winner ever reaches HOLD_LIMIT_REACHED, and every refusal is a seat taken.
type contention struct {
	attempts, seats, per int
	schedules            []string // one per round
	fans                 []fan    // the pool, poolSize of them
	next                 atomic.Int64
	cur                  []workerFan // per worker

	won, refused, limited atomic.Int64
}

type workerFan struct {
	fan  int // index in fans; -1 before the first
	wins int
}

// poolSize is how many fans a contended run can use up: every fan but the workers' last ones leaves
// with per wins, and a run wins at most rounds x seats.
func poolSize(rounds, seats, per, workers int) int {
	return (rounds*seats+per-1)/per + workers
}

// roundsFor is how many rounds to prepare for a run of d seconds at up to rate attempts a second,
// with a margin, at most limit (the schedules a concert may have).
func roundsFor(rate, seconds float64, attempts, limit int) int {
	n := int(math.Ceil(rate*seconds*1.25/float64(attempts))) + 1
	return min(max(n, 2), limit)
}

func newContention(attempts, seats, per, workers int, schedules []string, fans []fan) *contention {
	c := &contention{attempts: attempts, seats: seats, per: per, schedules: schedules, fans: fans, cur: make([]workerFan, workers)}
	for w := range c.cur {
		c.cur[w].fan = -1
	}
	return c
}

// total is the run's attempts when it does not end on time first.
func (c *contention) total() int { return len(c.schedules) * c.attempts }

var errPoolEmpty = errors.New("contended holds: the pool of fans ran out")

// pick returns worker w's fan, the schedule and the seat number (1-based) of attempt i.
func (c *contention) pick(w, i int) (f *fan, schedule string, seat int, err error) {
	round := i / c.attempts
	if round >= len(c.schedules) {
		return nil, "", 0, fmt.Errorf("contended holds: attempt %d is past the %d rounds", i, len(c.schedules))
	}
	cur := &c.cur[w]
	if cur.fan < 0 || cur.wins >= c.per {
		k := int(c.next.Add(1) - 1)
		if k >= len(c.fans) {
			return nil, "", 0, errPoolEmpty
		}
		*cur = workerFan{fan: k}
	}
	return &c.fans[cur.fan], c.schedules[round], 1 + rand.IntN(c.seats), nil
}

// record counts worker w's answer: 201 won, 409 SEAT_UNAVAILABLE refused, 409 HOLD_LIMIT_REACHED
// limited (the plan failed). It reports whether the answer is one of those.
func (c *contention) record(w, status int, code string) bool {
	switch {
	case status == http.StatusCreated:
		c.cur[w].wins++
		c.won.Add(1)
	case status == http.StatusConflict && code == "SEAT_UNAVAILABLE":
		c.refused.Add(1)
	case status == http.StatusConflict && code == "HOLD_LIMIT_REACHED":
		c.limited.Add(1)
	default:
		return false
	}
	return true
}

// note describes the run's shape, short: the table joins the notes of every repetition.
func (c *contention) note(answered int64) string {
	won, refused, limited := c.won.Load(), c.refused.Load(), c.limited.Load()
	s := fmt.Sprintf("%.1f rounds, %d won, %.1f%% refused", float64(answered)/float64(c.attempts), won, pct(refused+limited, answered))
	if limited > 0 {
		s += fmt.Sprintf(" (%d HOLD_LIMIT_REACHED: the plan is wrong)", limited)
	}
	if int(answered) >= c.total() {
		s += " (ran out of prepared rounds before the time was up)"
	}
	return s
}

// about describes the plan, once for the table.
func (c *contention) about() string {
	return fmt.Sprintf("rounds of %s attempts on %s fresh seats each, %d clients, each a fan at a time who holds until they have %d; per repetition",
		thousands(float64(c.attempts)), thousands(float64(c.seats)), len(c.cur), c.per)
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// contended runs the contended holds: rounds of 20,000 attempts on 1,000 seats, a fresh
// schedule each, prepared in advance for the run's length at up to the hello-world rate.
func (b *bench) contended(ctx context.Context, rep int, timed func(string, job, string) result) error {
	hello := b.results[rowHello]
	rate := 50_000.0
	if len(hello) > 0 {
		rate = hello[len(hello)-1].rate
	}
	attempts, seats, per := b.cfg.contendedAttempts, b.cfg.contendedSeats, purchaseQueue.MaxHoldsPerUser
	rounds := roundsFor(rate, b.cfg.duration.Seconds(), attempts, min(maxSchedules, maxConcertSeats/seats))
	c, err := b.api.createConcert(ctx, fmt.Sprintf("bench contended %d", rep), rounds,
		[]section{{Name: "R", Price: 1000, Seats: seats}}, purchaseQueue)
	if err != nil {
		return err
	}
	schedules := make([]string, len(c.Schedules))
	for i, s := range c.Schedules {
		schedules[i] = s.ID
	}
	fans, err := b.admittedFans(ctx, c.ID, "bc"+strconv.Itoa(rep)+"-", poolSize(rounds, seats, per, b.cfg.workers))
	if err != nil {
		return err
	}
	plan := newContention(attempts, seats, per, b.cfg.workers, schedules, fans)
	r := timed(rowContended, job{workers: b.cfg.workers, duration: b.cfg.duration, count: plan.total(),
		request: func(w, i int) (*http.Request, error) {
			f, schedule, seat, err := plan.pick(w, i)
			if err != nil {
				return nil, err
			}
			return b.api.newRequest(http.MethodPost, "/v1/reservations", f.jwt, f.token,
				[]byte(`{"scheduleId":"`+schedule+`","seatId":"R-`+strconv.Itoa(seat)+`"}`))
		},
		answer: func(w, _, status int, body []byte) bool {
			code := ""
			if status == http.StatusConflict {
				code = jsonString(body, "code")
			}
			return plan.record(w, status, code)
		},
	}, b.api.base+"/healthz")
	b.acked.holds.Add(plan.won.Load())
	ms := b.results[rowContended]
	ms[len(ms)-1].note = plan.note(r.answered)
	b.notes[rowContended] = plan.about()
	return nil
}

// The API's bounds on a concert (docs/api.md, Admin).
const (
	maxSchedules    = 100
	maxConcertSeats = 1_000_000
)
