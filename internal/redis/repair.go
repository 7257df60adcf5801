package redis

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The writes of restore (see internal/repair): the sale's state as the durable record has it, written
// in the layout the scripts keep. Each concert and each wallet shard is written in one MULTI (one hash
// slot), its old keys deleted first.

// RestoredConcert says what RestoreConcert wrote.
type RestoredConcert struct {
	Reservations, Held, Sold int
	Skipped                  []string // reservations the record holds too little of
}

// RestoreConcert replaces a concert's keys with its state from the record: its catalog and settings
// (the meta and cfg hashes); its line, empty, above every arrival and leave ever issued (the seq, head
// and leftn strings); and every reservation (the res hash) with its seat (a seats hash per seat slot)
// in the seat slot of its block: a held one in the holds zset (score: its expiry, Unix ms), one being
// paid in the paying zset (score: when it was claimed, Unix ms), each open one in its fan's gate entry;
// the sold seats counted per schedule (the sold hash), each slot's seat count and the concert's (inv,
// inventoryOf). The seats go to the slots of c's recorded placement (SeatPlacement's for a concert
// without one).
func RestoreConcert(ctx context.Context, rdb rueidis.Client, k ConcertKeys, c ticketrush.Concert,
	res []ticketrush.ReservationRecord, mark ticketrush.QueueMark) (RestoredConcert, error) {
	var rep RestoredConcert
	gone := append(k.All(c.ScheduleIDs()), k.Gate())
	sched := c.Placement.Slots
	if !c.Placement.Recorded {
		var err error
		if sched, err = SeatPlacement(ctx, rdb, k, c); err != nil {
			return rep, err
		}
	}
	meta, cfg := concertHashes(c, sched)
	if mark.MaxSeq > 0 {
		// the liveness of the line's arrivals (seen) counts from above every arrival ever issued, as the
		// line restarts there: the first join's field is the string's first
		cfg["seenbase"] = strconv.FormatUint(mark.MaxSeq, 10)
	}
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

	gates, err := restoreSeatSlots(ctx, rdb, &rep, k, c, splitSchedules(sched), res, &cmds)
	if err != nil {
		return rep, err
	}
	if c.Queue.LineShards <= 1 { // the gate of a line of one shard is the concert's slot
		cmds = append(cmds, hset(k.Gate(), gates)...)
	}
	if err := multi(ctx, rdb, cmds); err != nil {
		return rep, err
	}
	return rep, eachShard(ctx, rdb, k.Placed(splitShardAt(sched)), c, func(n int, sh ShardKeys) []func(rueidis.Builder) rueidis.Completed {
		keys := sh.All() // a line over shards restarts empty in every shard too, but its fans' gate records
		return append([]func(rueidis.Builder) rueidis.Completed{
			func(b rueidis.Builder) rueidis.Completed { return b.Unlink().Key(keys...).Build() }},
			hset(sh.Gate(), gateRecords(gates, n, c.Queue.LineShards))...)
	})
}

// eachShard runs, for each shard n of c's line when it is spread (lineShards > 1), the commands cmds
// builds for it, in one MULTI/EXEC per shard (each a slot of its own).
func eachShard(ctx context.Context, rdb rueidis.Client, k ConcertKeys, c ticketrush.Concert,
	cmds func(n int, sh ShardKeys) []func(rueidis.Builder) rueidis.Completed) error {
	for n := 0; n < c.Queue.LineShards && c.Queue.LineShards > 1; n++ {
		if err := multi(ctx, rdb, cmds(n, k.Shard(n))); err != nil {
			return err
		}
	}
	return nil
}

// inventoryOf counts total seats from their seat maps (schedule -> seat -> state) as the seat scripts
// keep the count: a seat in no map is available.
func inventoryOf(total int64, seats map[string]map[string]string) Inventory {
	inv := Inventory{Seats: total}
	inv.Available = inv.Seats
	for _, m := range seats {
		for _, v := range m {
			inv.Available--
			if st, ok := parseSeatState(v); ok && st.Kind == SeatSold {
				inv.Sold++
			}
		}
	}
	inv.SoldOut = inv.Seats > 0 && inv.Sold >= inv.Seats
	return inv
}

// RestoreAccessCodes writes a concert's access codes (hash of the code -> owner, "" while unclaimed).
func RestoreAccessCodes(ctx context.Context, rdb rueidis.Client, k ConcertKeys, codes map[string]string) error {
	return multi(ctx, rdb, hset(k.AccessCodes(), codes))
}

// RestoreSale writes back a concert's sale: its opening times and seed (cfg and the draw hash), its
// pre-queue's entrants (the pre-queue zset: score when each entered, Unix ms) and, once drawn (d not
// nil), the completed draw with its keys in the draw's order.
func RestoreSale(ctx context.Context, rdb rueidis.Client, k ConcertKeys, c ticketrush.Concert, entries []ticketrush.PrequeueEntry,
	d *ticketrush.DrawRecord, order []draw.Entrant) error {
	cfg, drawHash := saleHashes(c)
	cmds := append(hset(k.Cfg(), cfg), hset(k.Draw(), drawHash)...)
	shards := max(1, c.Queue.LineShards)
	if shards == 1 {
		for start := 0; start < len(entries); start += 10_000 {
			members := map[string]int64{}
			for _, e := range entries[start:min(start+10_000, len(entries))] {
				members[e.UserID] = msOf(e.At)
			}
			cmds = append(cmds, zadd(k.Prequeue(), members)...)
		}
	}
	if d != nil {
		value := drawKeysValue(order)
		cmds = append(cmds, hset(k.Draw(), drawnHash(d.Entrants, d.Digest, d.DrawnAt))...)
		cmds = append(cmds, func(b rueidis.Builder) rueidis.Completed { return b.Set().Key(k.DrawKeys()).Value(value).Build() })
	}
	if err := multi(ctx, rdb, cmds); err != nil {
		return err
	}
	// A line over shards: each entrant back in their shard's pre-queue; once drawn, as placed (the line
	// itself is not restored: their join is an arrival) in a sealed shard.
	members := make([]map[string]int64, shards)
	for _, e := range entries {
		sh := LineShard(e.UserID, shards)
		if members[sh] == nil {
			members[sh] = map[string]int64{}
		}
		members[sh][e.UserID] = msOf(e.At)
		if d != nil {
			members[sh][e.UserID] = -1
		}
	}
	return eachShard(ctx, rdb, k.Placed(splitShardAt(c.Placement.Slots)), c, func(n int, sh ShardKeys) []func(rueidis.Builder) rueidis.Completed {
		out := zadd(sh.Prequeue(), members[n])
		if d != nil {
			out = append(out, hset(sh.Draw(), map[string]string{"sealed": "1"})...)
		}
		return out
	})
}

// WalletShardState is a wallet shard's part of the record: balances by user, and the payments and
// refunds (keyed by reservation in the debits and refunds hashes, so that a payment stays idempotent)
// and Idempotency-Key records of its users.
type WalletShardState struct {
	Balances        map[string]int64
	Debits, Refunds []ticketrush.LedgerEntry
	IdempotencyKeys []ticketrush.IdempotencyRecord
}

// RestoreWalletShard replaces a wallet shard's keys with st; an Idempotency-Key record is written with
// what is left of its 24 h (none with less than a second left). It returns how many it wrote.
func RestoreWalletShard(ctx context.Context, rdb rueidis.Client, w WalletKeys, st WalletShardState, now time.Time) (int, error) {
	bal, debits, refunds := map[string]string{}, map[string]string{}, map[string]string{}
	for user, b := range st.Balances {
		bal[user] = strconv.FormatInt(b, 10)
	}
	for _, moves := range []struct {
		in  []ticketrush.LedgerEntry
		out map[string]string
	}{{st.Debits, debits}, {st.Refunds, refunds}} {
		for _, m := range moves.in {
			raw, err := encodeMovement(m)
			if err != nil {
				return 0, err
			}
			moves.out[m.ReservationID] = raw
		}
	}
	cmds := []func(rueidis.Builder) rueidis.Completed{
		func(b rueidis.Builder) rueidis.Completed {
			return b.Unlink().Key(w.All()...).Build()
		},
	}
	cmds = append(cmds, hset(w.Balances(), bal)...)
	cmds = append(cmds, hset(w.Debits(), debits)...)
	cmds = append(cmds, hset(w.Refunds(), refunds)...)
	keys := 0
	for _, r := range st.IdempotencyKeys {
		value, err := encodeIdempotency(r)
		if err != nil {
			return 0, err
		}
		left := r.At.Add(ticketrush.IdempotencyTTL).Sub(now)
		if left < time.Second {
			continue
		}
		key := w.Idempotency(r.UserID, r.Key)
		cmds = append(cmds, func(b rueidis.Builder) rueidis.Completed {
			return b.Set().Key(key).Value(value).Ex(left.Truncate(time.Second)).Build()
		})
		keys++
	}
	return keys, multi(ctx, rdb, cmds)
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

// restoreSeats builds the writes of reservations res into the seat slot at, and returns the seat count
// they give of c (whose one schedule is the slot's).
func restoreSeats(rep *RestoredConcert, at ScheduleKeys, total int64, res []ticketrush.ReservationRecord) ([]func(rueidis.Builder) rueidis.Completed, Inventory, error) {
	var cmds []func(rueidis.Builder) rueidis.Completed
	records := map[string]string{}
	seats := map[string]map[string]string{} // schedule -> seat -> state
	holds, paying := map[string]int64{}, map[string]int64{}
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
			seats[r.ScheduleID][r.SeatID] = SeatState{Kind: SeatSold, Reservation: r.ID}.String()
			sold[r.ScheduleID]++
			rep.Sold++
		case ticketrush.ReservationHeld:
			// Held, even past its expiry: the sweeper lapses it as it would have.
			if _, taken := seats[r.ScheduleID][r.SeatID]; !taken {
				seats[r.ScheduleID][r.SeatID] = SeatState{Kind: SeatHeld, Reservation: r.ID, Expires: msOf(r.ExpiresAt)}.String()
			}
			holds[r.ID] = msOf(r.ExpiresAt)
			rep.Held++
		case ticketrush.ReservationPaying:
			// Being paid: the sweeper finishes it (debited) or releases it.
			seats[r.ScheduleID][r.SeatID] = SeatState{Kind: SeatPaying, Reservation: r.ID}.String()
			paying[r.ID] = max(msOf(r.ClaimedAt), msOf(r.CreatedAt))
			rep.Held++
		}
		raw, err := encodeReservation(r.Reservation)
		if err != nil {
			return nil, Inventory{}, err
		}
		records[r.ID] = raw
		rep.Reservations++
	}
	cmds = append(cmds, hset(at.Reservations(), records)...)
	for _, m := range seats {
		cmds = append(cmds, hset(at.Seats(), m)...)
	}
	cmds = append(cmds, zadd(at.Holds(), holds)...)
	cmds = append(cmds, zadd(at.Paying(), paying)...)
	soldCounts := map[string]string{}
	for sched, n := range sold {
		soldCounts[sched] = strconv.Itoa(n)
	}
	cmds = append(cmds, hset(at.Sold(), soldCounts)...)
	return cmds, inventoryOf(total, seats), nil
}

// restoreSeatSlots writes each schedule's reservations, seats and count in its seat slots (each
// reservation in the block its id names, and skipped when its seat is another block's; one MULTI per
// slot, its old keys deleted first), adds the whole count to the concert's writes (cmds), and returns
// the fans' gate records (user -> each open hold's entry: until its expiry, or PayingGate after its
// claim while being paid), which the caller writes at the line's gates (gateRecords).
func restoreSeatSlots(ctx context.Context, rdb rueidis.Client, rep *RestoredConcert, k ConcertKeys, c ticketrush.Concert,
	slots []SeatSlot, res []ticketrush.ReservationRecord, cmds *[]func(rueidis.Builder) rueidis.Completed) (map[string]string, error) {
	blocks := blocksBySchedule(slots)
	bySlot := map[SeatSlot][]ticketrush.ReservationRecord{}
	gate := map[string][]string{}
	for _, r := range res {
		at := blocks.reservation(r.ScheduleID, r.ID)
		if at != blocks.seat(r.ScheduleID, r.SeatID) {
			// an id that names another block than its seat's: restored, its seat would be free where a
			// hold of it looks (the seats of a schedule in blocks are never made so; see ticketrush.ReservationBlock)
			rep.Skipped = append(rep.Skipped, r.ID)
			continue
		}
		bySlot[at] = append(bySlot[at], r)
		switch r.Status {
		case ticketrush.ReservationHeld:
			gate[r.UserID] = append(gate[r.UserID], r.ID+":"+i64toa(msOf(r.ExpiresAt)))
		case ticketrush.ReservationPaying:
			gate[r.UserID] = append(gate[r.UserID], r.ID+":"+i64toa(max(msOf(r.ExpiresAt), msOf(r.ClaimedAt.Add(PayingGate)))))
		}
	}
	total := Inventory{}
	for _, slot := range blocks.all(c.ScheduleIDs()) {
		sk := k.Schedule(slot)
		writes, inv, err := restoreSeats(rep, sk, blocks.seats(c, slot), bySlot[slot])
		if err != nil {
			return nil, err
		}
		gone := sk.All()
		slot := []func(rueidis.Builder) rueidis.Completed{
			func(b rueidis.Builder) rueidis.Completed { return b.Unlink().Key(gone...).Build() }}
		slot = append(append(slot, writes...), hset(sk.Inventory(), inventoryHash(inv))...)
		if err := multi(ctx, rdb, slot); err != nil {
			return nil, err
		}
		total.Seats, total.Available, total.Sold = total.Seats+inv.Seats, total.Available+inv.Available, total.Sold+inv.Sold
	}
	total.SoldOut = total.Seats > 0 && total.Sold >= total.Seats
	entries := map[string]string{}
	for user, ids := range gate {
		sort.Strings(ids)
		entries[user] = strings.Join(ids, ",")
	}
	*cmds = append(*cmds, hset(k.Inventory(), inventoryHash(total))...)
	return entries, nil
}

// gateRecords is the gate records of shard n of a line of shards (the fans whose shard it is), from
// every fan's (restoreSeatSlots).
func gateRecords(entries map[string]string, n, shards int) map[string]string {
	out := map[string]string{}
	for user, v := range entries {
		if LineShard(user, shards) == n {
			out[user] = v
		}
	}
	return out
}
