package writebehind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Source is the durable record as restore reads it.
type Source interface {
	Concerts(ctx context.Context) ([]ticketrush.Concert, error)
	Reservations(ctx context.Context, concertID string) ([]ticketrush.ReservationRecord, error)
	Balances(ctx context.Context) (map[string]int64, error)
	Movements(ctx context.Context, typ ticketrush.LedgerType) ([]ticketrush.LedgerEntry, error)
	IdempotencySince(ctx context.Context, since time.Time) ([]ticketrush.IdempotencyRecord, error)
	QueueMarks(ctx context.Context) (map[string]ticketrush.QueueMark, error)
	AccessCodes(ctx context.Context, concertID string) (map[string]string, error)
	Prequeue(ctx context.Context, concertID string) ([]ticketrush.PrequeueEntry, error)
	Draw(ctx context.Context, concertID string) (ticketrush.DrawRecord, bool, error)
	DrawPlaces(ctx context.Context, concertID string) ([]ticketrush.DrawPlace, error)
}

// ErrRedisWhole is a restore refused because Redis holds the whole state already: restoring over a
// live Redis would replace the newest changes with the record's older copy.
var ErrRedisWhole = errors.New("redis holds the whole state (the state marker is there); restore refuses to overwrite it without --force")

// RestoreReport says what a restore wrote.
type RestoreReport struct {
	Concerts, Reservations, Held, Sold, Users, IdempotencyKeys int
	Skipped                                                    []string // reservations the record holds too little of
	AccessCodes                                                int
}

// Restore rebuilds the sale's state in Redis from the durable record: the catalog and queue settings,
// every reservation with its seat (sold, held, being paid), every balance with the debits and refunds
// that keep payments idempotent, the Idempotency-Key records still in their 24 h, and each queue's
// arrival sequence above every token ever issued. Queue lines and active sets are not in the record:
// fans join again. Each concert and each wallet shard is written in one MULTI, its old keys (and its
// stream, with what an emptied Redis recorded meanwhile) deleted first. The state marker goes last.
// Unless force, it refuses a Redis whose marker is there.
func Restore(ctx context.Context, rdb rueidis.Client, src Source, prefix string, force bool, now time.Time) (RestoreReport, error) {
	var rep RestoreReport
	state := NewState(rdb, prefix)
	whole, err := state.Whole(ctx)
	if err != nil {
		return rep, err
	}
	if whole && !force {
		return rep, ErrRedisWhole
	}
	keys := redis.NewKeys(prefix)
	concerts, err := src.Concerts(ctx)
	if err != nil {
		return rep, err
	}
	marks, err := src.QueueMarks(ctx)
	if err != nil {
		return rep, err
	}
	for _, c := range concerts {
		res, err := src.Reservations(ctx, c.ID)
		if err != nil {
			return rep, err
		}
		if err := restoreConcert(ctx, rdb, keys.Concert(c.ID), c, res, marks[c.ID], now, &rep); err != nil {
			return rep, fmt.Errorf("restore concert %s: %w", c.ID, err)
		}
		codes, err := src.AccessCodes(ctx, c.ID)
		if err != nil {
			return rep, err
		}
		if err := multi(ctx, rdb, hset(keys.Concert(c.ID).AccessCodes(), codes)); err != nil {
			return rep, fmt.Errorf("restore access codes %s: %w", c.ID, err)
		}
		rep.AccessCodes += len(codes)
		if err := restoreOnSale(ctx, rdb, keys.Concert(c.ID), c, src); err != nil {
			return rep, fmt.Errorf("restore sale of concert %s: %w", c.ID, err)
		}
		rep.Concerts++
	}
	if err := restoreWallets(ctx, rdb, keys, src, now, &rep); err != nil {
		return rep, err
	}
	return rep, state.Mark(ctx, "restore", now)
}

// multi runs cmds in one MULTI/EXEC on one connection: they must share a hash slot.
func multi(ctx context.Context, rdb rueidis.Client, cmds []func(rueidis.Builder) rueidis.Completed) error {
	if len(cmds) == 0 {
		return nil
	}
	return rdb.Dedicated(func(c rueidis.DedicatedClient) error {
		all := make(rueidis.Commands, 0, len(cmds)+2)
		all = append(all, c.B().Multi().Build())
		for _, f := range cmds {
			all = append(all, f(c.B()))
		}
		all = append(all, c.B().Exec().Build())
		for _, r := range c.DoMulti(ctx, all...) {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	})
}

// hset builds HSETs of at most 1000 fields each.
func hset(key string, fields map[string]string) []func(rueidis.Builder) rueidis.Completed {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []func(rueidis.Builder) rueidis.Completed
	for start := 0; start < len(names); start += 1000 {
		part := names[start:min(start+1000, len(names))]
		out = append(out, func(b rueidis.Builder) rueidis.Completed {
			fv := b.Hset().Key(key).FieldValue()
			for _, k := range part {
				fv = fv.FieldValue(k, fields[k])
			}
			return fv.Build()
		})
	}
	return out
}

func zadd(key string, members map[string]int64) []func(rueidis.Builder) rueidis.Completed {
	if len(members) == 0 {
		return nil
	}
	return []func(rueidis.Builder) rueidis.Completed{func(b rueidis.Builder) rueidis.Completed {
		sm := b.Zadd().Key(key).ScoreMember()
		for m, s := range members {
			sm = sm.ScoreMember(float64(s), m)
		}
		return sm.Build()
	}}
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func restoreConcert(ctx context.Context, rdb rueidis.Client, k redis.ConcertKeys, c ticketrush.Concert,
	res []ticketrush.ReservationRecord, mark ticketrush.QueueMark, now time.Time, rep *RestoreReport) error {
	scheduleIDs := make([]string, len(c.Schedules))
	for i, s := range c.Schedules {
		scheduleIDs[i] = s.ID
	}
	gone := k.All(scheduleIDs)
	meta, cfg := redis.ConcertHashes(c)
	cmds := []func(rueidis.Builder) rueidis.Completed{
		func(b rueidis.Builder) rueidis.Completed { return b.Unlink().Key(gone...).Build() },
	}
	cmds = append(cmds, hset(k.Meta(), meta)...)
	cmds = append(cmds, hset(k.Cfg(), cfg)...)
	// The line restarts empty, above every arrival ever issued: no token is issued twice, and every
	// instance's view (head and tail only grow) stays right.
	if mark.MaxSeq > 0 {
		seq := strconv.FormatUint(mark.MaxSeq, 10)
		cmds = append(cmds,
			func(b rueidis.Builder) rueidis.Completed { return b.Set().Key(k.Seq()).Value(seq).Build() },
			func(b rueidis.Builder) rueidis.Completed { return b.Set().Key(k.Head()).Value(seq).Build() })
	}
	if mark.MaxLeave > 0 {
		leave := strconv.FormatUint(mark.MaxLeave, 10)
		cmds = append(cmds, func(b rueidis.Builder) rueidis.Completed { return b.Set().Key(k.LeftN()).Value(leave).Build() })
	}

	records := map[string]string{}
	seats := map[string]map[string]string{} // schedule -> seat -> state
	holds, paying := map[string]int64{}, map[string]int64{}
	open := map[string][]string{}
	sold := map[string]int{}
	for _, r := range res {
		if r.SeatID == "" || r.Price < 0 || r.CreatedAt.IsZero() {
			rep.Skipped = append(rep.Skipped, r.ID)
			continue
		}
		if seats[r.ScheduleID] == nil {
			seats[r.ScheduleID] = map[string]string{}
		}
		switch r.Status {
		case ticketrush.ReservationPaid:
			seats[r.ScheduleID][r.SeatID] = redis.SeatState{Kind: redis.SeatSold, Reservation: r.ID}.String()
			sold[r.ScheduleID]++
			rep.Sold++
		case ticketrush.ReservationHeld:
			// Held, even past its expiry: the sweeper lapses it as it would have.
			if _, taken := seats[r.ScheduleID][r.SeatID]; !taken {
				seats[r.ScheduleID][r.SeatID] = redis.SeatState{Kind: redis.SeatHeld, Reservation: r.ID, Expires: ms(r.ExpiresAt)}.String()
			}
			holds[r.ID] = ms(r.ExpiresAt)
			open[r.UserID] = append(open[r.UserID], r.ID)
			rep.Held++
		case ticketrush.ReservationPaying:
			// Being paid: the sweeper finishes it (debited) or releases it.
			seats[r.ScheduleID][r.SeatID] = redis.SeatState{Kind: redis.SeatPaying, Reservation: r.ID}.String()
			paying[r.ID] = max(ms(r.ClaimedAt), ms(r.CreatedAt))
			open[r.UserID] = append(open[r.UserID], r.ID)
			rep.Held++
		}
		raw, err := redis.EncodeReservation(r.Reservation)
		if err != nil {
			return err
		}
		records[r.ID] = raw
		rep.Reservations++
	}
	cmds = append(cmds, hset(k.Reservations(), records)...)
	for sched, m := range seats {
		cmds = append(cmds, hset(k.Seats(sched), m)...)
	}
	cmds = append(cmds, zadd(k.Holds(), holds)...)
	cmds = append(cmds, zadd(k.Paying(), paying)...)
	uholds := map[string]string{}
	for user, ids := range open {
		sort.Strings(ids)
		uholds[user] = redis.OpenHolds(ids)
	}
	cmds = append(cmds, hset(k.UserHolds(), uholds)...)
	soldCounts := map[string]string{}
	for sched, n := range sold {
		soldCounts[sched] = strconv.Itoa(n)
	}
	cmds = append(cmds, hset(k.Sold(), soldCounts)...)
	cmds = append(cmds, hset(k.Inventory(), redis.InventoryHash(inventoryOf(c, seats)))...)
	return multi(ctx, rdb, cmds)
}

// inventoryOf counts a concert's seats from its seat maps (schedule -> seat -> state) as the seat
// scripts keep the count: a seat in no map is available.
func inventoryOf(c ticketrush.Concert, seats map[string]map[string]string) redis.Inventory {
	inv := redis.Inventory{Seats: int64(c.TotalSeats() * len(c.Schedules))}
	inv.Available = inv.Seats
	for _, m := range seats {
		for _, v := range m {
			inv.Available--
			if st, ok := redis.ParseSeatState(v); ok && st.Kind == redis.SeatSold {
				inv.Sold++
			}
		}
	}
	inv.SoldOut = inv.Seats > 0 && inv.Sold >= inv.Seats
	return inv
}

func restoreWallets(ctx context.Context, rdb rueidis.Client, keys redis.Keys, src Source, now time.Time, rep *RestoreReport) error {
	balances, err := src.Balances(ctx)
	if err != nil {
		return err
	}
	type shard struct{ bal, debits, refunds map[string]string }
	shards := make([]shard, redis.WalletShards)
	for i := range shards {
		shards[i] = shard{map[string]string{}, map[string]string{}, map[string]string{}}
	}
	for user, b := range balances {
		shards[redis.WalletShard(user)].bal[user] = strconv.FormatInt(b, 10)
		rep.Users++
	}
	for _, typ := range []ticketrush.LedgerType{ticketrush.LedgerPayment, ticketrush.LedgerRefund} {
		moves, err := src.Movements(ctx, typ)
		if err != nil {
			return err
		}
		for _, m := range moves {
			raw, err := redis.EncodeMovement(m)
			if err != nil {
				return err
			}
			sh := shards[redis.WalletShard(m.UserID)]
			if typ == ticketrush.LedgerPayment {
				sh.debits[m.ReservationID] = raw
			} else {
				sh.refunds[m.ReservationID] = raw
			}
		}
	}
	idem, err := src.IdempotencySince(ctx, now.Add(-ticketrush.IdempotencyTTL))
	if err != nil {
		return err
	}
	perShard := make([][]ticketrush.IdempotencyRecord, redis.WalletShards)
	for _, r := range idem {
		n := redis.WalletShard(r.UserID)
		perShard[n] = append(perShard[n], r)
	}
	for i, sh := range shards {
		w := keys.WalletShard(i)
		cmds := []func(rueidis.Builder) rueidis.Completed{
			func(b rueidis.Builder) rueidis.Completed {
				return b.Unlink().Key(w.All()...).Build()
			},
		}
		cmds = append(cmds, hset(w.Balances(), sh.bal)...)
		cmds = append(cmds, hset(w.Debits(), sh.debits)...)
		cmds = append(cmds, hset(w.Refunds(), sh.refunds)...)
		for _, r := range perShard[i] {
			value, err := redis.EncodeIdempotency(r)
			if err != nil {
				return err
			}
			left := r.At.Add(ticketrush.IdempotencyTTL).Sub(now)
			if left < time.Second {
				continue
			}
			key := w.Idempotency(r.UserID, r.Key)
			cmds = append(cmds, func(b rueidis.Builder) rueidis.Completed {
				return b.Set().Key(key).Value(value).Ex(left.Truncate(time.Second)).Build()
			})
			rep.IdempotencyKeys++
		}
		if err := multi(ctx, rdb, cmds); err != nil {
			return fmt.Errorf("restore wallet shard %d: %w", i, err)
		}
	}
	return nil
}

// Print writes the report in words.
func (r RestoreReport) Print(w io.Writer) {
	fmt.Fprintf(w, "restored %d concerts, %d reservations (%d held or being paid, %d sold), %d balances, %d idempotency keys\n",
		r.Concerts, r.Reservations, r.Held, r.Sold, r.Users, r.IdempotencyKeys)
	for _, id := range r.Skipped {
		fmt.Fprintf(w, "skipped reservation %s: the record lacks its hold (see the dead-letter streams)\n", id)
	}
}

// restoreOnSale writes back a concert's sale: its opening times and seed (so the commitment is
// unchanged), its pre-queue's entrants as the record has them (so a draw not yet run still runs, at its
// opening), and a completed draw with its keys, recomputed from the seed and the recorded places (the
// draw is a pure function of them). The line itself restarts empty like every line.
func restoreOnSale(ctx context.Context, rdb rueidis.Client, k redis.ConcertKeys, c ticketrush.Concert, src Source) error {
	if c.Sale == nil {
		return nil
	}
	cfg, drawHash := redis.SaleHashes(c)
	cmds := append(hset(k.Cfg(), cfg), hset(k.Draw(), drawHash)...)
	entries, err := src.Prequeue(ctx, c.ID)
	if err != nil {
		return err
	}
	for start := 0; start < len(entries); start += 10_000 {
		members := map[string]int64{}
		for _, e := range entries[start:min(start+10_000, len(entries))] {
			members[e.UserID] = ms(e.At)
		}
		cmds = append(cmds, zadd(k.Prequeue(), members)...)
	}
	d, drawn, err := src.Draw(ctx, c.ID)
	if err != nil {
		return err
	}
	if drawn {
		places, err := src.DrawPlaces(ctx, c.ID)
		if err != nil {
			return err
		}
		if int64(len(places)) != d.Entrants {
			return fmt.Errorf("the record has %d draw places of %d entrants; wait for the write-behind and restore again", len(places), d.Entrants)
		}
		seed := draw.Seed(c.Sale.Seed)
		order := make([]draw.Entrant, len(places))
		for i, p := range places {
			order[i] = draw.Entrant{User: p.UserID, Key: seed.KeyOf(c.ID, p.UserID)}
		}
		if got := draw.DigestOf(order); got != d.Digest {
			return fmt.Errorf("the recorded places hash to %s, the draw to %s", got, d.Digest)
		}
		value := redis.DrawKeysValue(order)
		cmds = append(cmds, hset(k.Draw(), redis.DrawnHash(d.Entrants, d.Digest, d.DrawnAt))...)
		cmds = append(cmds, func(b rueidis.Builder) rueidis.Completed { return b.Set().Key(k.DrawKeys()).Value(value).Build() })
	}
	return multi(ctx, rdb, cmds)
}
