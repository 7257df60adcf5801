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
	for _, name := range lua.Names() {
		if err := c.Do(ctx, c.B().ScriptLoad().Script(lua.Source(name)).Build()).Error(); err != nil {
			return nil, fmt.Errorf("SCRIPT LOAD %s: %w", name, err)
		}
	}
	prefix := svcconfig.KeyPrefix(func(name string) string { return b.env(name, "") })
	lineKeys := redis.NewKeys(prefix).Concert(line.ID)
	side, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(b.redis.port)},
		DisableCache: true, ClientName: stormSide})
	if err != nil {
		return nil, err
	}
	defer side.Close()
	floorSHA, err := side.Do(ctx, side.B().ScriptLoad().Script(floorScript).Build()).ToString()
	if err != nil {
		return nil, err
	}

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
	var drainErr error
	drained := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(drained)
		t := time.NewTicker(stormDrainEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			es, _, err := sl.drain(ctx, lineKeys.Admitted())
			if err != nil {
				drainErr = err
				return
			}
			res.entries += len(es)
			for _, e := range es {
				res.tally.add(e)
			}
		}
	}()
	var floorWG sync.WaitGroup
	floorWG.Go(func() {
		t := time.NewTicker(stormFloorEvery)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			side.Do(ctx, side.B().Evalsha().Sha1(floorSHA).Numkeys(0).Build())
			side.Do(ctx, side.B().Hset().Key("bench:storm:floor").FieldValue().FieldValue(strconv.Itoa(i%64), "1").Build())
		}
	})

	fmt.Fprintf(os.Stderr, "bench: Redis time per call: a storm of %d fans from %d clients, SLOWLOG at 0 µs\n", fans, stormWorkers)
	start := time.Now()
	b.stormFans(ctx, res, line.ID, buy.Schedules[0].ID, buyers)
	res.took = time.Since(start)
	close(stop)
	floorWG.Wait()
	<-drained
	side.Do(ctx, side.B().Del().Key("bench:storm:floor").Build())
	if drainErr != nil {
		return nil, drainErr
	}
	es, admitted1, err := sl.drain(ctx, lineKeys.Admitted())
	if err != nil {
		return nil, err
	}
	res.entries += len(es)
	for _, e := range es {
		res.tally.add(e)
	}
	a0, err0 := parseCount(admitted0)
	a1, err1 := parseCount(admitted1)
	switch {
	case errors.Join(err0, err1) != nil:
		res.tickNA = "the line's admissions counter: " + errors.Join(err0, err1).Error()
	case res.failed["join"] > 0:
		res.tickNA = fmt.Sprintf("%d joins had no answer: who admitted them is unknown", res.failed["join"])
	default:
		res.admitted = a1 - a0 - res.atOnce
	}
	return res, nil
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
