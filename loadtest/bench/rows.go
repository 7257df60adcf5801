package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// measure is one figure of one repetition.
type measure struct {
	rate     float64
	p50, p99 time.Duration
	failed   float64 // share of requests that failed
	note     string
	// usPerCall is Redis's own time per call (INFO commandstats), where the row measures Redis.
	usPerCall float64
	// cpu is the run's CPU per request by process (cpu.go), where it was read (hasCPU).
	cpu    cpuSplit
	hasCPU bool
}

func fromResult(r result) measure {
	return measure{rate: r.rate(), p50: r.hist.quantile(0.50), p99: r.hist.quantile(0.99), failed: r.failRatio()}
}

// The rows of the table, in order.
const (
	rowHello         = "hello-world (net/http)"
	rowHelloWrk      = "hello-world, wrk -t1 -c64 (reference)"
	rowPolls         = "polls      GET /v1/queue"
	rowJoins         = "joins      POST /v1/concerts/{id}/queue"
	rowCharges       = "charges    POST /v1/points/charges"
	rowSpread        = "holds      spread"
	rowContended     = "holds      contended, ~95% refused"
	rowPayments      = "payments   POST /v1/payments"
	rowSeatMapBare   = "same bytes from memory (net/http)"
	rowSeatMap       = "seat map   GET …/seats, 2,000 seats"
	rowSeatMapGzBare = "same gzip bytes from memory (net/http)"
	rowSeatMapGz     = "seat map   gzip"
	rowSeatMap304    = "seat map   If-None-Match, 304"
	rowRedis         = "redis-benchmark EVALSHA seat_hold"
	rowCapJoins1     = "capacity   joins of one concert, 1 master"
	rowCapHolds1     = "capacity   holds of one concert, 1 master"
	rowCapJoins3     = "capacity   joins of one concert, 3 masters"
	rowCapHolds3     = "capacity   holds of one concert, 3 masters"
	rowFloor         = "floor      EVALSHA 'return 1', 1 master"
)

// rows is the table's order.
var rows = append([]string{rowHello, rowHelloWrk, rowPolls, rowJoins, rowCharges, rowSpread, rowContended, rowPayments,
	rowSeatMapBare, rowSeatMap, rowSeatMapGzBare, rowSeatMapGz, rowSeatMap304, rowRedis}, capacityRows...)

// capacityRows are the rows of the capacity of one concert (capacity.go): the table's last, and the
// whole table of `make capacity`.
var capacityRows = []string{rowCapJoins1, rowCapJoins3, rowCapHolds1, rowCapHolds3, rowFloor}

// ceilingOf is the row a figure is divided by in the ÷ ceiling column: hello-world, or for a seat map
// the same bytes sent by a bare net/http. Ceilings themselves, redis-benchmark and the capacity rows
// (Redis's figures, not HTTP's) have none.
func ceilingOf(row string) string {
	switch row {
	case rowHello, rowHelloWrk, rowRedis, rowSeatMapBare, rowSeatMapGzBare, rowCapJoins1, rowCapHolds1, rowCapJoins3,
		rowCapHolds3, rowFloor:
		return ""
	case rowSeatMap:
		return rowSeatMapBare
	case rowSeatMapGz:
		return rowSeatMapGzBare
	}
	return rowHello
}

// rep runs every measured scenario once.
func (b *bench) rep(ctx context.Context, rep int) error {
	fmt.Fprintf(os.Stderr, "bench: repetition %d/%d\n", rep+1, b.cfg.reps)
	timed := b.timer(ctx)
	b.helloRows(ctx, timed)
	fans, err := b.joinRow(ctx, rep, timed)
	if err != nil {
		return err
	}
	b.pollRow(fans, timed)

	if !b.purchase {
		return nil
	}
	if err := b.spread(ctx, rep, timed); err != nil {
		return err
	}
	if err := b.contended(ctx, rep, timed); err != nil {
		return err
	}
	return b.seatMaps(ctx, timed)
}

// timer returns the timed run of a row: warm up at warmURL, run the job, and keep its figure (with the
// run's CPU per request where it was read) under the row's name, logging its failures.
func (b *bench) timer(ctx context.Context) func(name string, j job, warmURL string) result {
	c := b.api.client
	return func(name string, j job, warmURL string) result {
		warm(ctx, c, warmURL, j.workers)
		before, cpuErr := b.cpuReading(name)
		r := j.run(ctx, c)
		m := fromResult(r)
		if cpuErr == nil {
			after, err := b.cpuReading(name)
			if err == nil {
				m.cpu, err = b.cpu.split(before, after, r.answered+r.failed)
			}
			m.hasCPU = err == nil
		}
		b.results[name] = append(b.results[name], m)
		if r.failed > 0 {
			fmt.Fprintf(os.Stderr, "bench: %s: %d of %d failed, first: %v\n", strings.Join(strings.Fields(name), " "), r.failed, r.answered+r.failed, r.firstErr)
		}
		return r
	}
}

// helloRows measure the ceiling: hello-world through the same generator and client, and the same
// server driven by wrk, where it is installed: how much of the ceiling the Go generator itself costs
// (about 50,000 req/s with wrk -t1 -c64 on this machine).
func (b *bench) helloRows(ctx context.Context, timed func(string, job, string) result) {
	d := b.cfg.duration
	timed(rowHello, job{workers: b.cfg.workers, duration: d,
		request: func(int, int) (*http.Request, error) { return http.NewRequest(http.MethodGet, b.helloURL, nil) },
	}, b.helloURL)

	if _, err := exec.LookPath("wrk"); err == nil {
		if m, err := runWrk(ctx, b.helloURL, d); err == nil {
			b.results[rowHelloWrk] = append(b.results[rowHelloWrk], m)
		} else {
			b.na[rowHelloWrk] = err.Error()
		}
	} else {
		b.na[rowHelloWrk] = "wrk is not installed (apt-get install wrk)"
	}
}

// joinRow measures joins: every request a new fan joining a paused line, so that each one is a
// WAITING arrival. It returns the fans who joined, in random order.
func (b *bench) joinRow(ctx context.Context, rep int, timed func(string, job, string) result) ([]fan, error) {
	cj, err := b.api.createConcert(ctx, fmt.Sprintf("bench joins %d", rep), 1,
		[]section{{Name: "R", Price: 1000, Seats: 1}}, queueSettings{ActiveCapacity: 1000, AdmitPerSecond: 1, Paused: true})
	if err != nil {
		return nil, err
	}
	minters := make([]*minter, b.cfg.workers)
	joined := make([][]fan, b.cfg.workers)
	for i := range minters {
		minters[i] = newMinter(b.api.secret)
	}
	path := "/v1/concerts/" + cj.ID + "/queue"
	timed(rowJoins, job{workers: b.cfg.workers, duration: b.cfg.duration,
		request: func(w, i int) (*http.Request, error) {
			user := "bj" + strconv.Itoa(rep) + "-" + strconv.Itoa(i)
			jwt := minters[w].mint(user)
			joined[w] = append(joined[w], fan{user: user, jwt: jwt})
			return b.api.newRequest(http.MethodPost, path, jwt, "", nil)
		},
		answer: func(w, _, status int, body []byte) bool {
			f := &joined[w][len(joined[w])-1]
			f.token = jsonString(body, "token")
			return status == http.StatusCreated && f.token != ""
		},
	}, b.api.base+"/healthz")

	var fans []fan
	for _, fs := range joined {
		for _, f := range fs {
			if f.token != "" {
				fans = append(fans, f)
			}
		}
	}
	if len(fans) == 0 {
		return nil, errors.New("no join succeeded; see " + filepath.Join(b.cfg.logs, "ticketrush.log"))
	}
	rand.Shuffle(len(fans), func(i, j int) { fans[i], fans[j] = fans[j], fans[i] })
	return fans, nil
}

// pollRow measures polls: the joined fans, WAITING in the paused line, polling round the clock.
func (b *bench) pollRow(fans []fan, timed func(string, job, string) result) {
	timed(rowPolls, job{workers: b.cfg.workers, duration: b.cfg.duration,
		request: func(_, i int) (*http.Request, error) {
			f := fans[i%len(fans)]
			return b.api.newRequest(http.MethodGet, "/v1/queue", f.jwt, f.token, nil)
		},
		answer: func(_, _, status int, body []byte) bool {
			return status == http.StatusOK && jsonString(body, "status") == "WAITING"
		},
	}, b.api.base+"/healthz")
}

// purchaseQueue lets every fan in at once and keeps holds for the whole run.
var purchaseQueue = queueSettings{ActiveCapacity: 1_000_000, AdmitPerSecond: 1_000_000, ActiveTTLSeconds: 3600,
	HoldTTLSeconds: 3600, MaxHoldsPerUser: 4}

// admitted fans for a purchase run: every one ACTIVE before the run starts.
func (b *bench) admittedFans(ctx context.Context, concertID, prefix string, n int) ([]fan, error) {
	users := make([]string, n)
	for i := range users {
		users[i] = prefix + strconv.Itoa(i)
	}
	fans, err := b.api.joinAll(ctx, concertID, users, b.cfg.workers)
	if err != nil {
		return nil, err
	}
	for range 100 {
		var q struct {
			Waiting int64 `json:"waiting"`
		}
		if _, err := b.api.call(ctx, http.MethodGet, "/admin/v1/concerts/"+concertID+"/queue", b.api.admin, nil, &q); err != nil {
			return nil, err
		}
		if q.Waiting == 0 {
			return fans, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, errors.New("fans still waiting 10 s after joining a line with room for all")
}

// spread: fans charge points, hold every seat of a 20,000-seat schedule (4 each, the seats shuffled),
// then pay every hold.
func (b *bench) spread(ctx context.Context, rep int, timed func(string, job, string) result) error {
	const price = 1000
	n := b.cfg.spreadSeats
	c, err := b.api.createConcert(ctx, fmt.Sprintf("bench spread %d", rep), 1, []section{{Name: "R", Price: price, Seats: n}}, purchaseQueue)
	if err != nil {
		return err
	}
	per := purchaseQueue.MaxHoldsPerUser
	fans, err := b.admittedFans(ctx, c.ID, "bh"+strconv.Itoa(rep)+"-", (n+per-1)/per)
	if err != nil {
		return err
	}
	health := b.api.base + "/healthz"
	timed(rowCharges, b.chargeJob(fans, per*price), health)

	seats := make([][]byte, n)
	for i, s := range rand.Perm(n) {
		seats[i] = []byte(`{"scheduleId":"` + c.Schedules[0].ID + `","seatId":"R-` + strconv.Itoa(s+1) + `"}`)
	}
	owner := func(i int) *fan { return &fans[i%len(fans)] }
	res := make([]string, n)
	timed(rowSpread, job{workers: b.cfg.workers, count: n,
		request: func(_, i int) (*http.Request, error) {
			f := owner(i)
			return b.api.newRequest(http.MethodPost, "/v1/reservations", f.jwt, f.token, seats[i])
		},
		answer: b.heldInto(res),
	}, health)

	var held []int
	for i, id := range res {
		if id != "" {
			held = append(held, i)
		}
	}
	timed(rowPayments, b.payJob(len(held), func(k int) (*fan, string) { return owner(held[k]), res[held[k]] }), health)
	return nil
}

// chargeJob has each of fans charge amount points once (an Idempotency-Key per fan).
func (b *bench) chargeJob(fans []fan, amount int) job {
	body := []byte(`{"amount":` + strconv.Itoa(amount) + `}`)
	return job{workers: b.cfg.workers, count: len(fans),
		request: func(_, i int) (*http.Request, error) {
			req, err := b.api.newRequest(http.MethodPost, "/v1/points/charges", fans[i].jwt, "", body)
			if err == nil {
				req.Header.Set("Idempotency-Key", "bench-charge-"+fans[i].user)
			}
			return req, err
		},
		answer: func(_, _, status int, _ []byte) bool { return b.acked.charge(status) },
	}
}

// payJob pays count holds, the k-th the reservation hold(k) gives, by the fan who holds it (an
// Idempotency-Key per reservation).
func (b *bench) payJob(count int, hold func(k int) (*fan, string)) job {
	return job{workers: b.cfg.workers, count: count,
		request: func(_, k int) (*http.Request, error) {
			f, resID := hold(k)
			req, err := b.api.newRequest(http.MethodPost, "/v1/payments", f.jwt, "", []byte(`{"reservationId":"`+resID+`"}`))
			if err == nil {
				req.Header.Set("Idempotency-Key", "bench-pay-"+resID)
			}
			return req, err
		},
		answer: func(_, _, status int, _ []byte) bool { return b.acked.payment(status) },
	}
}

// median returns the median of each field of ms, taken on its own; the CPU figures over the runs
// that read them.
func median(ms []measure) measure {
	pick := func(ms []measure, f func(measure) float64) float64 {
		v := make([]float64, len(ms))
		for i, m := range ms {
			v[i] = f(m)
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	out := measure{
		rate:      pick(ms, func(m measure) float64 { return m.rate }),
		p50:       time.Duration(pick(ms, func(m measure) float64 { return float64(m.p50) })),
		p99:       time.Duration(pick(ms, func(m measure) float64 { return float64(m.p99) })),
		failed:    pick(ms, func(m measure) float64 { return m.failed }),
		usPerCall: pick(ms, func(m measure) float64 { return m.usPerCall }),
	}
	var withCPU []measure
	for _, m := range ms {
		if m.hasCPU {
			withCPU = append(withCPU, m)
		}
	}
	if len(withCPU) > 0 {
		out.hasCPU = true
		out.cpu = cpuSplit{
			generator: pick(withCPU, func(m measure) float64 { return m.cpu.generator }),
			server:    pick(withCPU, func(m measure) float64 { return m.cpu.server }),
			redis:     pick(withCPU, func(m measure) float64 { return m.cpu.redis }),
			postgres:  pick(withCPU, func(m measure) float64 { return m.cpu.postgres }),
			other:     pick(withCPU, func(m measure) float64 { return m.cpu.other }),
		}
	}
	var notes []string
	for _, m := range ms {
		if m.note != "" && !contains(notes, m.note) {
			notes = append(notes, m.note)
		}
	}
	out.note = strings.Join(notes, "; ")
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// heldInto is the answer of a job of winning holds: the reservation id of request i goes to res[i],
// and each acknowledged hold is counted for the bench's "nothing lost" check.
func (b *bench) heldInto(res []string) func(_, i, status int, body []byte) bool {
	return func(_, i, status int, body []byte) bool {
		res[i] = jsonString(body, "id")
		ok := status == http.StatusCreated && res[i] != ""
		if ok {
			b.acked.holds.Add(1)
		}
		return ok
	}
}
