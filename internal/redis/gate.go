package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// gated runs the token status script and cmd in one round trip. A gated call is the fan showing up
// (noShowSeconds): the same round trip takes them off the concert's no-show watch.
func (s *Store) gated(ctx context.Context, c ticketrush.QueueClaims, now time.Time, cmd func() rueidis.Completed) (ticketrush.TokenState, rueidis.RedisResult, error) {
	keys, args := s.keys.Concert(c.ConcertID).queueStatus(c, now)
	msg, data, err := s.execWith(ctx, s.status, keys, args, cmd, s.shown(c))
	if err != nil {
		return ticketrush.TokenState{}, data, fmt.Errorf("token status: %w", err)
	}
	st, err := tokenState(msg)
	return st, data, err
}

// Gate checks a gated call's token: its state, and the fan shown up (off the concert's no-show watch),
// in one round trip, as the gated reads do but without a read of their own (the seat view serves the
// seat map from memory).
func (s *Store) Gate(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	keys, args := s.keys.Concert(c.ConcertID).queueStatus(c, now)
	msg, _, err := s.execWith(ctx, s.status, keys, args, s.shown(c))
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
