package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// redis checks the run's concert in Redis: its reservations, seat maps, debits and the fans' balances.
func (c *checker) redis(ctx context.Context) {
	in := redis.NewInspector(c.rdb, c.cfg.prefix)
	res, err := in.Reservations(ctx, c.s.SetupData.ConcertID)
	if err != nil {
		c.r.fail("redis: reservations", "%v", err)
		return
	}
	c.redisReservations(res)
	if !c.redisSeatMaps(ctx, in, res) {
		return
	}
	debits, refunds, ok := c.redisDebits(ctx, in, res)
	if !ok {
		return
	}
	c.redisBalances(ctx, in, debits, refunds)
}

// redisReservations keeps the PAID reservations of res (c.paidRes) and checks that no seat was sold
// twice and no payment is half done.
func (c *checker) redisReservations(res map[string]ticketrush.Reservation) {
	statuses := map[ticketrush.ReservationStatus]int{}
	paidBySeat := map[string][]string{}
	c.paidRes = map[string]ticketrush.Reservation{}
	for id, v := range res {
		statuses[v.Status]++
		if v.Status == ticketrush.ReservationPaid {
			seat := v.ScheduleID + "/" + v.SeatID
			paidBySeat[seat] = append(paidBySeat[seat], id)
			c.paidRes[id] = v
		}
	}
	var twice []string
	for seat, ids := range paidBySeat {
		if len(ids) > 1 {
			twice = append(twice, fmt.Sprintf("%s by %s", seat, strings.Join(ids, ", ")))
		}
	}
	sort.Strings(twice)
	c.r.expect(len(twice) == 0, "redis: no seat sold twice", "%d reservations %v%s", len(res), statuses, list(twice))
	c.r.expect(statuses[ticketrush.ReservationPaying] == 0, "redis: no payment half done", "%d reservations PAYING after the run",
		statuses[ticketrush.ReservationPaying])
}

// redisSeatMaps checks the seat maps: every SOLD seat names a PAID reservation of that seat, and every
// PAID one is SOLD. It returns false when a map could not be read.
func (c *checker) redisSeatMaps(ctx context.Context, in *redis.Inspector, res map[string]ticketrush.Reservation) bool {
	d := c.s.SetupData
	var bad []string
	soldSeats := 0
	for _, sch := range d.Schedules {
		seats, err := in.SeatStates(ctx, d.ConcertID, sch)
		if err != nil {
			c.r.fail("redis: seat maps", "%v", err)
			return false
		}
		for seat, st := range seats {
			if st.Kind != redis.SeatSold {
				continue
			}
			soldSeats++
			id := st.Reservation
			if v, ok := c.paidRes[id]; !ok || v.SeatID != seat || v.ScheduleID != sch {
				bad = append(bad, fmt.Sprintf("%s/%s SOLD to %s (%s)", sch, seat, id, res[id].Status))
			}
		}
	}
	if soldSeats != len(c.paidRes) {
		bad = append(bad, fmt.Sprintf("%d seats SOLD, %d reservations PAID", soldSeats, len(c.paidRes)))
	}
	c.r.expect(len(bad) == 0 && int64(soldSeats) == c.sold, "redis: SOLD seats = PAID", "%d SOLD seats, %d PAID reservations, the admin API counts %d%s",
		soldSeats, len(c.paidRes), c.sold, list(bad))
	return true
}

// redisDebits checks the money of res: each sale one debit of its price; a debit without a sale
// refunded. It returns the sums debited and refunded, and false when they could not be read.
func (c *checker) redisDebits(ctx context.Context, in *redis.Inspector, res map[string]ticketrush.Reservation) (debits, refunds int64, ok bool) {
	var moneyBad []string
	ids := make([]string, 0, len(res))
	for id := range res {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	sorted := make([]ticketrush.Reservation, len(ids))
	for i, id := range ids {
		sorted[i] = res[id]
	}
	money, err := in.Money(ctx, sorted)
	if err != nil {
		c.r.fail("redis: debits", "%v", err)
		return 0, 0, false
	}
	for i, id := range ids {
		v := res[id]
		debit, refund := money[i].Debit, money[i].Refund
		if debit != nil {
			debits += debit.Amount
		}
		if refund != nil {
			refunds += refund.Amount
		}
		switch {
		case v.Status == ticketrush.ReservationPaid && (debit == nil || debit.Amount != v.Price || refund != nil):
			moneyBad = append(moneyBad, fmt.Sprintf("%s PAID with debit %v refund %v", id, debit, refund))
		case v.Status != ticketrush.ReservationPaid && v.Status != ticketrush.ReservationPaying && debit != nil && refund == nil:
			moneyBad = append(moneyBad, fmt.Sprintf("%s %s debited %d and not refunded", id, v.Status, debit.Amount))
		}
	}
	c.r.expect(len(moneyBad) == 0, "redis: one debit per sale", "%d debited, %d refunded%s", debits, refunds, list(moneyBad))
	return debits, refunds, true
}

// redisBalances keeps the balances of the run's fans (c.redisBal) and checks that none is negative and
// that they add up with what was charged, debited and refunded.
func (c *checker) redisBalances(ctx context.Context, in *redis.Inspector, debits, refunds int64) {
	var err error
	c.redisBal, err = in.Balances(ctx, c.users)
	if err != nil {
		c.r.fail("redis: balances", "%v", err)
		return
	}
	var sum int64
	var negative []string
	for _, u := range c.users {
		n := c.redisBal[u]
		sum += n
		if n < 0 {
			negative = append(negative, fmt.Sprintf("%s %d", u, n))
		}
	}
	c.r.expect(len(negative) == 0, "redis: no balance negative", "%d fans%s", len(c.users), list(negative))
	charged, okC := c.s.count("points_charged")
	paid, okP := c.s.count("points_paid")
	if !okC && !okP {
		c.r.expect(sum == 0 && debits == 0, "redis: money adds up", "no money moved in this run: balances sum to %d, debits %d", sum, debits)
		return
	}
	c.r.expect(paid == debits, "redis: debits = payments", "the service debited %d, fans were told they paid %d", debits, paid)
	c.r.expect(sum == charged-debits+refunds, "redis: money adds up", "balances sum to %d; charged %d − debited %d + refunded %d = %d",
		sum, charged, debits, refunds, charged-debits+refunds)
}

// ---- write-behind drain ----

// drain waits until every consumer group of the concert's stream and of every wallet shard's stream
// has nothing pending and nothing unread. It reports whether Postgres can be checked.
func (c *checker) drain(ctx context.Context) bool {
	streams, err := redis.NewKeys(c.cfg.prefix).AllEventStreams(ctx, c.rdb, []string{c.s.SetupData.ConcertID})
	if err != nil {
		c.r.fail("write-behind drained", "%v", err)
		return false
	}
	start := time.Now()
	for {
		behind, groups, err := c.behind(ctx, streams)
		if err != nil {
			c.r.fail("write-behind drained", "%v", err)
			return false
		}
		if groups == 0 {
			c.r.fail("write-behind drained", "no consumer group reads the streams: the write-behind is not running, so Postgres cannot be checked")
			return false
		}
		if len(behind) == 0 {
			c.r.pass("write-behind drained", "%d groups caught up after %s", groups, time.Since(start).Round(100*time.Millisecond))
			return true
		}
		if time.Since(start) > c.cfg.drain {
			c.r.fail("write-behind drained", "still behind after %s: %s", c.cfg.drain, strings.Join(behind, "; "))
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *checker) behind(ctx context.Context, streams []string) (behind []string, groups int, err error) {
	cmds := make(rueidis.Commands, len(streams))
	for i, s := range streams {
		cmds[i] = c.rdb.B().XinfoGroups().Key(s).Build()
	}
	for i, reply := range c.rdb.DoMulti(ctx, cmds...) {
		msg, err := reply.ToMessage()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") {
				continue
			}
			return nil, 0, fmt.Errorf("XINFO GROUPS %s: %w", streams[i], err)
		}
		list, err := redis.ParseStreamGroups(msg)
		if err != nil {
			return nil, 0, err
		}
		for _, g := range list {
			groups++
			lag := g.Lag
			if lag < 0 { // lag unknown (nil): compare the group's position with the stream's end
				info, err := c.rdb.Do(ctx, c.rdb.B().XinfoStream().Key(streams[i]).Build()).AsMap()
				if err != nil {
					return nil, 0, err
				}
				end := info["last-generated-id"]
				if id, _ := end.ToString(); id != g.LastDelivered {
					lag = 1
				} else {
					lag = 0
				}
			}
			if g.Pending > 0 || lag > 0 {
				behind = append(behind, fmt.Sprintf("%s group %s: %d pending, %d unread", streams[i], g.Name, g.Pending, lag))
			}
		}
	}
	return behind, groups, nil
}
