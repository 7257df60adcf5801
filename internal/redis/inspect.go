package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Inspector reads the sale's state directly, outside the scripts, for tools that check it (the
// load-test checker, reconcile): it knows which key holds what, keyed by what, and how each value is encoded.
type Inspector struct {
	client rueidis.Client
	keys   Keys
}

// NewInspector returns an inspector of the keys under prefix.
func NewInspector(client rueidis.Client, prefix string) *Inspector {
	return &Inspector{client: client, keys: NewKeys(prefix)}
}

// Reservations returns every reservation of a concert, by id (the res hash). A record that does not
// decode, or lacks its status or seat, is an error.
func (in *Inspector) Reservations(ctx context.Context, concertID string) (map[string]ticketrush.Reservation, error) {
	keys, err := in.reservationKeys(ctx, concertID)
	if err != nil {
		return nil, err
	}
	out := map[string]ticketrush.Reservation{}
	for _, key := range keys {
		raw, err := in.client.Do(ctx, in.client.B().Hgetall().Key(key).Build()).AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("HGETALL %s: %w", key, err)
		}
		for id, js := range raw {
			r, err := decodeReservation(concertID, js)
			if err != nil || r.Status == "" || r.SeatID == "" {
				return nil, fmt.Errorf("reservation %s does not decode (%v)", id, err)
			}
			r.ID = id
			out[id] = r
		}
	}
	return out, nil
}

// SeatStates returns the seats of a schedule that are not available (its seats hashes, a block's each), by seat id;
// a value that is no seat state is left out.
func (in *Inspector) SeatStates(ctx context.Context, concertID, scheduleID string) (map[string]SeatState, error) {
	sched, err := in.seatSlots(ctx, concertID)
	if err != nil {
		return nil, err
	}
	out := map[string]SeatState{}
	for _, slot := range blocksBySchedule(sched).of(scheduleID) {
		key := in.keys.Concert(concertID).Schedule(slot).Seats()
		raw, err := in.client.Do(ctx, in.client.B().Hgetall().Key(key).Build()).AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("HGETALL %s: %w", key, err)
		}
		for seat, v := range raw {
			if st, ok := parseSeatState(v); ok {
				out[seat] = st
			}
		}
	}
	return out, nil
}

// Money is the debit and the refund of one reservation in its user's wallet shard; nil where there is
// none.
type Money struct{ Debit, Refund *ticketrush.Payment }

// Money returns the debit and refund of each reservation (the debits and refunds hashes of its user's
// wallet shard), in one pipeline.
func (in *Inspector) Money(ctx context.Context, res []ticketrush.Reservation) ([]Money, error) {
	cmds := make(rueidis.Commands, 0, 2*len(res))
	for _, r := range res {
		w := in.keys.Wallet(r.UserID)
		cmds = append(cmds, in.client.B().Hget().Key(w.Debits()).Field(r.ID).Build(), in.client.B().Hget().Key(w.Refunds()).Field(r.ID).Build())
	}
	replies := in.client.DoMulti(ctx, cmds...)
	out := make([]Money, len(res))
	for i, r := range res {
		debit, dErr := movementOf(r.ID, replies[2*i])
		refund, rErr := movementOf(r.ID, replies[2*i+1])
		if dErr != nil || rErr != nil {
			return nil, fmt.Errorf("reading the debit of %s: %v %v", r.ID, dErr, rErr)
		}
		out[i] = Money{Debit: debit, Refund: refund}
	}
	return out, nil
}

// movementOf reads a debit or refund record of reservation resID; nil when there is none.
func movementOf(resID string, m rueidis.RedisResult) (*ticketrush.Payment, error) {
	raw, err := m.ToString()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, err := decodeMovement(resID, raw)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// ActiveSeq returns the arrival sequence of a user's ACTIVE token in a concert (the aseq hash).
func (in *Inspector) ActiveSeq(ctx context.Context, concertID, userID string) (uint64, error) {
	key := in.keys.Concert(concertID).ActiveSeq()
	n, err := in.client.Do(ctx, in.client.B().Hget().Key(key).Field(userID).Build()).AsUint64()
	if err != nil {
		return 0, fmt.Errorf("HGET %s %s: %w", key, userID, err)
	}
	return n, nil
}

// Balances returns the balance of each user (the bal hash of the user's wallet shard; 0 without one),
// a pipeline per 1000 users.
func (in *Inspector) Balances(ctx context.Context, users []string) (map[string]int64, error) {
	out := make(map[string]int64, len(users))
	for lo := 0; lo < len(users); lo += 1000 {
		batch := users[lo:min(lo+1000, len(users))]
		cmds := make(rueidis.Commands, len(batch))
		for i, u := range batch {
			cmds[i] = in.client.B().Hget().Key(in.keys.Wallet(u).Balances()).Field(u).Build()
		}
		for i, reply := range in.client.DoMulti(ctx, cmds...) {
			n, err := reply.AsInt64()
			if rueidis.IsRedisNil(err) {
				n, err = 0, nil
			}
			if err != nil {
				return nil, fmt.Errorf("balance of %s: %w", batch[i], err)
			}
			out[batch[i]] = n
		}
	}
	return out, nil
}

// ConcertSlot is one seat slot of a concert read at one moment, with the point of its stream it is as of.
type ConcertSlot struct {
	Reservations map[string]ticketrush.Reservation // the res hash, by id
	Seats        map[string]map[string]SeatState   // schedule -> seat -> state, of the seats hashes; a value that is no seat state is left out
	Inventory    Inventory                         // the inv hash, as the seat scripts keep it
	InventoryOK  bool                              // false when inv is absent or malformed
	Counted      Inventory                         // the seat count the seats hashes give (inventoryOf)
	Cut          ticketrush.EventID                // the last entry of the slot's stream the read saw (cut)
}

// WalletSlot is wallet shard's hash slot read at one moment, with the point of its stream it is as of.
type WalletSlot struct {
	Balances map[string]int64   // the bal hash, by user
	Cut      ticketrush.EventID // the last entry of the shard's stream the read saw (cut)
}

// WalletSlot reads the balances of wallet shard n in one MULTI, with the cut of its stream.
func (in *Inspector) WalletSlot(ctx context.Context, n int) (WalletSlot, error) {
	w := in.keys.WalletShard(n)
	replies, err := in.atOnce(ctx, w.Events(), func(b rueidis.Builder) rueidis.Commands {
		return rueidis.Commands{b.Hgetall().Key(w.Balances()).Build()}
	})
	if err != nil {
		return WalletSlot{}, fmt.Errorf("read wallet %s: %w", w.Balances(), err)
	}
	raw, err := replies[0].AsStrMap()
	if err != nil {
		return WalletSlot{}, err
	}
	bal := make(map[string]int64, len(raw))
	for user, v := range raw {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return WalletSlot{}, fmt.Errorf("balance of %s: %w", user, err)
		}
		bal[user] = n
	}
	return WalletSlot{Balances: bal, Cut: cut(w.Events(), &replies[1], &replies[2])}, nil
}

// atOnce runs the commands of build, then XINFO STREAM of stream and TIME, in one MULTI on one
// connection, and returns EXEC's replies: those of build's commands, then the stream's and the clock's.
func (in *Inspector) atOnce(ctx context.Context, stream string, build func(rueidis.Builder) rueidis.Commands) ([]rueidis.RedisMessage, error) {
	var replies []rueidis.RedisMessage
	err := in.client.Dedicated(func(d rueidis.DedicatedClient) error {
		all := append(rueidis.Commands{d.B().Multi().Build()}, build(d.B())...)
		all = append(all, d.B().XinfoStream().Key(stream).Build(), d.B().Time().Build(), d.B().Exec().Build())
		res := d.DoMulti(ctx, all...)
		var err error
		replies, err = res[len(res)-1].ToArray()
		return err
	})
	return replies, err
}

// cut is the point of a stream a snapshot saw: its last-generated-id (from XINFO STREAM). A stream
// without entries since it was made (or none at all) has none: then every event of the stream's name
// the record holds came before, and the cut is just before Redis' clock at the snapshot (TIME), which
// any later entry id is at or after.
func cut(stream string, info, clock *rueidis.RedisMessage) ticketrush.EventID {
	if m, err := info.AsMap(); err == nil {
		if v, ok := m["last-generated-id"]; ok {
			s, _ := v.ToString()
			if id, err := ticketrush.ParseEventID(stream, s); err == nil && (id.Ms > 0 || id.Seq > 0) {
				return id
			}
		}
	}
	now := time.Now().UnixMilli()
	if t, err := clock.AsStrSlice(); err == nil && len(t) == 2 {
		if sec, err := strconv.ParseInt(t[0], 10, 64); err == nil {
			usec, _ := strconv.ParseInt(t[1], 10, 64)
			now = sec*1000 + usec/1000
		}
	}
	return ticketrush.EventID{Stream: stream, Ms: now - 1, Seq: 1<<62 - 1}
}

// reservationKeys is every res hash of a concert: each seat slot's.
func (in *Inspector) reservationKeys(ctx context.Context, concertID string) ([]string, error) {
	sched, err := in.seatSlots(ctx, concertID)
	if err != nil {
		return nil, err
	}
	k := in.keys.Concert(concertID)
	keys := make([]string, len(sched))
	for i, slot := range sched {
		keys[i] = k.Schedule(slot).Reservations()
	}
	return keys, nil
}

// SeatSlots reads every seat slot of concert c (ScheduleSlot), each at one moment with the cut of its
// stream, in the order of c's schedules and each schedule's blocks.
func (in *Inspector) SeatSlots(ctx context.Context, c ticketrush.Concert) ([]ConcertSlot, error) {
	sched, err := in.seatSlots(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	blocks := blocksBySchedule(sched)
	var out []ConcertSlot
	for _, seatSlot := range blocks.all(c.ScheduleIDs()) {
		slot, err := in.ScheduleSlot(ctx, c, seatSlot, blocks.seats(c, seatSlot))
		if err != nil {
			return nil, err
		}
		out = append(out, slot)
	}
	return out, nil
}

// ScheduleSlot reads seat slot seatSlot of concert c, which keeps seats of its schedule's seats, in one
// MULTI, with the cut of its stream: its reservations, seats and seat count, and the count its seats
// give.
func (in *Inspector) ScheduleSlot(ctx context.Context, c ticketrush.Concert, seatSlot SeatSlot, seats int64) (ConcertSlot, error) {
	scheduleID := seatSlot.ScheduleID()
	k := in.keys.Concert(c.ID).Schedule(seatSlot)
	slot := ConcertSlot{Reservations: map[string]ticketrush.Reservation{}, Seats: map[string]map[string]SeatState{}}
	replies, err := in.atOnce(ctx, k.Events(), func(b rueidis.Builder) rueidis.Commands {
		return rueidis.Commands{b.Hgetall().Key(k.Reservations()).Build(), b.Hgetall().Key(k.Seats()).Build(),
			b.Hgetall().Key(k.Inventory()).Build()}
	})
	if err != nil {
		return slot, fmt.Errorf("read schedule %s of %s: %w", scheduleID, c.ID, err)
	}
	raw, err := replies[0].AsStrMap()
	if err != nil {
		return slot, fmt.Errorf("read reservations of %s: %w", scheduleID, err)
	}
	for id, js := range raw {
		r, err := decodeReservation(c.ID, js)
		if err != nil {
			return slot, fmt.Errorf("reservation %s: %w", id, err)
		}
		slot.Reservations[id] = r
	}
	m, err := replies[1].AsStrMap()
	if err != nil {
		return slot, fmt.Errorf("read seats of %s: %w", scheduleID, err)
	}
	states := make(map[string]SeatState, len(m))
	for seat, v := range m {
		if st, ok := parseSeatState(v); ok {
			states[seat] = st
		}
	}
	slot.Seats[scheduleID] = states
	inv, err := replies[2].AsStrMap()
	if err != nil {
		return slot, fmt.Errorf("read inventory of %s: %w", scheduleID, err)
	}
	slot.Inventory, slot.InventoryOK = decodeInventory(inv)
	slot.Counted = inventoryOf(seats, map[string]map[string]string{scheduleID: m})
	slot.Cut = cut(k.Events(), &replies[3], &replies[4])
	return slot, nil
}

// seatSlots is the seat slots of a concert.
func (in *Inspector) seatSlots(ctx context.Context, concertID string) ([]SeatSlot, error) {
	l, _, err := in.keys.ReadLayout(ctx, in.client, concertID)
	return l.Schedules, err
}
