package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Gate checks a gated call's token: its state, and the fan shown up (off the concert's no-show watch),
// in one round trip, as the gated reads do but without a read of their own (the seat view serves the
// seat map from memory).
func (s *Store) Gate(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	msg, _, err := s.execWith(ctx, s.status, s.keys.Concert(c.ConcertID).status(), statusArgs(c, now), s.shown(c))
	if err != nil {
		return ticketrush.TokenState{}, fmt.Errorf("token status: %w", err)
	}
	return tokenState(msg)
}

// shown takes the fan off the concert's no-show watch: sent with every gated call's token check.
func (s *Store) shown(c ticketrush.QueueClaims) func() rueidis.Completed {
	return func() rueidis.Completed {
		return s.client.B().Zrem().Key(s.keys.Concert(c.ConcertID).NoShow()).Member(c.UserID).Build()
	}
}

// TakenSeats reads the seats of each schedule of a concert that are not plainly free (HGETALL of each
// schedule's seats hash, pipelined in one round trip): what an instance's seat view keeps.
func (s *Store) TakenSeats(ctx context.Context, concertID string, scheduleIDs []string) ([]map[string]ticketrush.TakenSeat, error) {
	k := s.keys.Concert(concertID)
	cmds := make(rueidis.Commands, len(scheduleIDs))
	for i, id := range scheduleIDs {
		cmds[i] = s.client.B().Hgetall().Key(k.Seats(id)).Build()
	}
	out := make([]map[string]ticketrush.TakenSeat, len(scheduleIDs))
	for i, res := range s.client.DoMulti(ctx, cmds...) {
		raw, err := res.AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("seats of %s: %w", scheduleIDs[i], unavailable(err))
		}
		out[i] = takenSeats(raw)
	}
	return out, nil
}

// takenSeats reads a schedule's seats hash; an entry that is no seat state counts as free, as the seat
// map shows it (the script would refuse it: the view only refuses what the script surely would).
func takenSeats(raw map[string]string) map[string]ticketrush.TakenSeat {
	out := make(map[string]ticketrush.TakenSeat, len(raw))
	for seat, v := range raw {
		if t, ok := takenSeat(v); ok {
			out[seat] = t
		}
	}
	return out
}

// takenSeat reads one seat state of a seats hash; ok is false for anything that is no seat state.
// TakenSeat.StatusAt is what the seat map shows of it (GatedSeats and the seat view alike).
func takenSeat(v string) (ticketrush.TakenSeat, bool) {
	st, ok := ParseSeatState(v)
	if !ok {
		return ticketrush.TakenSeat{}, false
	}
	switch st.Kind {
	case SeatSold:
		return ticketrush.TakenSeat{Sold: true}, true
	case SeatPaying:
		return ticketrush.TakenSeat{Paying: true}, true
	}
	return ticketrush.TakenSeat{HeldUntil: st.Expires}, true // SeatHeld: ParseSeatState knows no other kind
}
