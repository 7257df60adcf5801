package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	svcconfig "github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/lua"
)

// The storm: Redis's time per call of every script under an HTTP storm against the service, from
// SLOWLOG (slowlog.go).
const (
	stormWorkers   = 48
	stormAdmitRate = 200 // fans a second the storm's line admits: below its joins' rate, so most wait for the tick
	stormPrice     = 1000
	stormSide      = "bench-floor" // the side client's name
	// stormSlowlogLen bounds the slow log between two drains (an entry is some hundreds of bytes to a
	// few KB: a script call keeps up to 32 arguments of 128 bytes).
	stormSlowlogLen = 200_000
	stormDrainEvery = 250 * time.Millisecond
	stormFloorEvery = 2 * time.Millisecond // the side client's trickle: an EVALSHA and an HSET each time
)

// stormResult is what the storm measured.
type stormResult struct {
	fans     int
	took     time.Duration
	tally    *callTally
	admitted int64 // fans the tick admitted into the storm's line during it
	atOnce   int64 // joins admitted at once by the join itself
	tickNA   string
	failed   map[string]int64 // requests that failed, by step
	firstErr error
	entries  int
}

// redisStorm runs an HTTP storm against the service while its Redis records every command. Each of
// stormWorkers clients takes fans in turn; for each: two new fans join the storm's line (it admits
// stormAdmitRate a second, so most wait and the scheduler's tick admits them), and a fan admitted
// beforehand charges points, holds two seats, cancels one and pays the other with an Idempotency-Key
// (every step of a payment). A side client sends an EVALSHA of `return 1` and a plain HSET every
// stormFloorEvery: the floor, in the same storm. What the service acknowledges is counted for the
// durability check (b.acked).
func (b *bench) redisStorm(ctx context.Context, fans int) (*stormResult, error) {
	line, err := b.api.createConcert(ctx, "bench storm line", 1, []section{{Name: "R", Price: stormPrice, Seats: 1}},
		queueSettings{ActiveCapacity: 1_000_000, AdmitPerSecond: stormAdmitRate, ActiveTTLSeconds: 3600})
	if err != nil {
		return nil, err
	}
	buy, err := b.api.createConcert(ctx, "bench storm purchase", 1, []section{{Name: "R", Price: stormPrice, Seats: 2 * fans}}, purchaseQueue)
	if err != nil {
		return nil, err
	}
	buyers, err := b.admittedFans(ctx, buy.ID, "sb-", fans)
	if err != nil {
		return nil, err
	}
	c := b.redis.client
	// Every script loaded, as on a Redis that has served a while: no EVAL fallback in the figures.
	if err := loadScripts(ctx, c); err != nil {
		return nil, err
	}
	prefix := svcconfig.KeyPrefix(func(name string) string { return b.env(name, "") })
	lineKeys := redis.NewKeys(prefix).Concert(line.ID)
	side, floorSHA, err := b.stormSideClient(ctx)
	if err != nil {
		return nil, err
	}
	defer side.Close()

	sl, err := startSlowlog(ctx, c, stormSlowlogLen)
	if err != nil {
		return nil, err
	}
	defer sl.restore()
	res := &stormResult{fans: fans, tally: newCallTally(scriptSHAs(), stormSide, lineKeys.Cfg()), failed: map[string]int64{}}
	_, admitted0, err := sl.drain(ctx, lineKeys.Admitted()) // the start: an empty log and the line's admissions so far
	if err != nil {
		return nil, err
	}
	w := watchStorm(ctx, sl, lineKeys.Admitted(), res, side, floorSHA)

	fmt.Fprintf(os.Stderr, "bench: Redis time per call: a storm of %d fans from %d clients, SLOWLOG at 0 µs\n", fans, stormWorkers)
	start := time.Now()
	b.stormFans(ctx, res, line.ID, buy.Schedules[0].ID, buyers)
	res.took = time.Since(start)
	drainErr := w.end()
	side.Do(ctx, side.B().Del().Key("bench:storm:floor").Build())
	if drainErr != nil {
		return nil, drainErr
	}
	es, admitted1, err := sl.drain(ctx, lineKeys.Admitted())
	if err != nil {
		return nil, err
	}
	res.record(es)
	res.countAdmitted(admitted0, admitted1)
	return res, nil
}

// loadScripts loads every script of the store on the Redis of c.
func loadScripts(ctx context.Context, c rueidis.Client) error {
	for _, name := range lua.Names() {
		if err := c.Do(ctx, c.B().ScriptLoad().Script(lua.Source(name)).Build()).Error(); err != nil {
			return fmt.Errorf("SCRIPT LOAD %s: %w", name, err)
		}
	}
	return nil
}

// stormSideClient connects the storm's side client (named stormSide) to the service's Redis and loads
// the floor's script on it, returning its SHA.
func (b *bench) stormSideClient(ctx context.Context) (rueidis.Client, string, error) {
	side, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(b.redis.port)},
		DisableCache: true, ClientName: stormSide})
	if err != nil {
		return nil, "", err
	}
	floorSHA, err := side.Do(ctx, side.B().ScriptLoad().Script(floorScript).Build()).ToString()
	if err != nil {
		side.Close()
		return nil, "", err
	}
	return side, floorSHA, nil
}

// stormWatch is what runs beside the storm's fans: the slow log drained into the result every
// stormDrainEvery, and the side client's floor trickle every stormFloorEvery.
type stormWatch struct {
	stop     chan struct{}
	drained  chan struct{} // closed when the drains have stopped
	floor    sync.WaitGroup
	drainErr error
}

// watchStorm starts the drains of sl (reading admittedKey with each) into res, and the side client's
// trickle of an EVALSHA of floorSHA and a plain HSET.
func watchStorm(ctx context.Context, sl *slowlog, admittedKey string, res *stormResult, side rueidis.Client, floorSHA string) *stormWatch {
	w := &stormWatch{stop: make(chan struct{}), drained: make(chan struct{})}
	go func() {
		defer close(w.drained)
		t := time.NewTicker(stormDrainEvery)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			es, _, err := sl.drain(ctx, admittedKey)
			if err != nil {
				w.drainErr = err
				return
			}
			res.record(es)
		}
	}()
	w.floor.Go(func() {
		t := time.NewTicker(stormFloorEvery)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			side.Do(ctx, side.B().Evalsha().Sha1(floorSHA).Numkeys(0).Build())
			side.Do(ctx, side.B().Hset().Key("bench:storm:floor").FieldValue().FieldValue(strconv.Itoa(i%64), "1").Build())
		}
	})
	return w
}

// end stops the drains and the trickle, waits for both, and returns the drains' error.
func (w *stormWatch) end() error {
	close(w.stop)
	w.floor.Wait()
	<-w.drained
	return w.drainErr
}

// record counts slow-log entries into the result.
func (res *stormResult) record(es []slowEntry) {
	res.entries += len(es)
	for _, e := range es {
		res.tally.add(e)
	}
}

// countAdmitted sets the fans the tick admitted during the storm from the line's admissions counter
// before and after it, less those the joins admitted at once, or tickNA when that is not known.
func (res *stormResult) countAdmitted(before, after string) {
	a0, err0 := parseCount(before)
	a1, err1 := parseCount(after)
	switch {
	case errors.Join(err0, err1) != nil:
		res.tickNA = "the line's admissions counter: " + errors.Join(err0, err1).Error()
	case res.failed["join"] > 0:
		res.tickNA = fmt.Sprintf("%d joins had no answer: who admitted them is unknown", res.failed["join"])
	default:
		res.admitted = a1 - a0 - res.atOnce
	}
}

// parseCount reads a counter's value; a counter never set is 0.
func parseCount(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// stormFans runs the storm's fans from stormWorkers clients.
func (b *bench) stormFans(ctx context.Context, res *stormResult, lineID, scheduleID string, buyers []fan) {
	var next atomic.Int64
	var mu sync.Mutex
	fail := func(step string, err error) {
		mu.Lock()
		defer mu.Unlock()
		res.failed[step]++
		if res.firstErr == nil {
			res.firstErr = fmt.Errorf("%s: %w", step, err)
		}
	}
	var atOnce atomic.Int64
	var wg sync.WaitGroup
	for range stormWorkers {
		m := newMinter(b.api.secret)
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(buyers) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				for _, tail := range []string{"a", "b"} {
					user := "sj-" + strconv.Itoa(i) + tail
					status, body, err := b.send(ctx, http.MethodPost, "/v1/concerts/"+lineID+"/queue", m.mint(user), "", nil, "")
					if err == nil && status != http.StatusCreated {
						err = fmt.Errorf("%d %s", status, snippet(body))
					}
					if err != nil {
						fail("join", err)
						continue
					}
					if jsonString(body, "status") == "ACTIVE" {
						atOnce.Add(1)
					}
				}
				f := &buyers[i]
				body := []byte(`{"amount":` + strconv.Itoa(stormPrice) + `}`)
				status, rb, err := b.send(ctx, http.MethodPost, "/v1/points/charges", f.jwt, "", body, "bench-storm-charge-"+f.user)
				if !b.acked.charge(status) {
					fail("charge", orStatus(err, status, rb))
					continue
				}
				var ids [2]string
				for k := range ids {
					seat := []byte(`{"scheduleId":"` + scheduleID + `","seatId":"R-` + strconv.Itoa(2*i+k+1) + `"}`)
					status, rb, err := b.send(ctx, http.MethodPost, "/v1/reservations", f.jwt, f.token, seat, "")
					if ids[k] = jsonString(rb, "id"); status != http.StatusCreated || ids[k] == "" {
						fail("hold", orStatus(err, status, rb))
						ids[k] = ""
						continue
					}
					b.acked.holds.Add(1)
				}
				if ids[1] != "" {
					status, rb, err := b.send(ctx, http.MethodDelete, "/v1/reservations/"+ids[1], f.jwt, "", nil, "")
					if status/100 != 2 {
						fail("cancel", orStatus(err, status, rb))
					}
				}
				if ids[0] != "" {
					status, rb, err := b.send(ctx, http.MethodPost, "/v1/payments", f.jwt, "", []byte(`{"reservationId":"`+ids[0]+`"}`), "bench-storm-pay-"+ids[0])
					if !b.acked.payment(status) {
						fail("payment", orStatus(err, status, rb))
					}
				}
			}
		})
	}
	wg.Wait()
	res.atOnce = atOnce.Load()
}

func orStatus(err error, status int, body []byte) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%d %s", status, snippet(body))
}

// send makes one request of the storm and reads its answer.
func (b *bench) send(ctx context.Context, method, path, jwt, queueToken string, body []byte, idemKey string) (int, []byte, error) {
	req, err := b.api.newRequest(method, path, jwt, queueToken, body)
	if err != nil {
		return 0, nil, err
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := b.api.client.Do(req.WithContext(ctx))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, resp.Body)
	return resp.StatusCode, buf.Bytes(), err
}
