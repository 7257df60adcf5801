package redis

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Inspector reads the sale's state directly, outside the scripts, for tools that check it (the
// load-test checker): it knows which key holds what, keyed by what, and how each value is encoded.
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
	key := in.keys.Concert(concertID).Reservations()
	raw, err := in.client.Do(ctx, in.client.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("HGETALL %s: %w", key, err)
	}
	out := make(map[string]ticketrush.Reservation, len(raw))
	for id, js := range raw {
		r, err := DecodeReservation(concertID, js)
		if err != nil || r.Status == "" || r.SeatID == "" {
			return nil, fmt.Errorf("reservation %s does not decode (%v)", id, err)
		}
		r.ID = id
		out[id] = r
	}
	return out, nil
}

// SeatStates returns the seats of a schedule that are not available (its seats hash), by seat id;
// a value that is no seat state is left out.
func (in *Inspector) SeatStates(ctx context.Context, concertID, scheduleID string) (map[string]SeatState, error) {
	key := in.keys.Concert(concertID).Seats(scheduleID)
	raw, err := in.client.Do(ctx, in.client.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("HGETALL %s: %w", key, err)
	}
	out := make(map[string]SeatState, len(raw))
	for seat, v := range raw {
		if st, ok := ParseSeatState(v); ok {
			out[seat] = st
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
	p, err := DecodeMovement(resID, raw)
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

// Inspector returns an inspector of the store's keys.
func (s *Store) Inspector() *Inspector { return &Inspector{client: s.client, keys: s.keys} }
