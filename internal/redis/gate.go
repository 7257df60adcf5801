package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// gated runs the token status script and the reads in one round trip and returns their replies. A gated
// call is the fan showing up (noShowSeconds): the same round trip takes them off the concert's no-show
// watch.
func (s *Store) gated(ctx context.Context, c ticketrush.QueueClaims, now time.Time, reads ...func() rueidis.Completed) (ticketrush.TokenState, []rueidis.RedisResult, error) {
	keys, args := s.keys.Concert(c.ConcertID).queueStatus(c, now)
	msg, res, err := s.execWith(ctx, s.status, keys, args, append([]func() rueidis.Completed{s.shown(c)}, reads...)...)
	data := res[1:] // after the show-up's reply: execWith answers each command, on its fallback too
	if err != nil {
		return ticketrush.TokenState{}, data, fmt.Errorf("token status: %w", err)
	}
	st, err := tokenState(msg)
	if err == nil {
		st, err = s.inShard(ctx, c, st, now)
	}
	return st, data, err
}

// inShard is the state of a token the concert's slot found gone (EXPIRED): for a line spread over
// shards, the fan may still be WAITING in their shard (a refusal's path only: no round trip more for
// an ACTIVE token).
func (s *Store) inShard(ctx context.Context, c ticketrush.QueueClaims, st ticketrush.TokenState, now time.Time) (ticketrush.TokenState, error) {
	if st.Status != ticketrush.StatusExpired {
		return st, nil
	}
	w, err := s.ways(ctx, c.ConcertID)
	if err != nil {
		return st, err
	}
	return w.line.expired(ctx, c, st, now)
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
	st, err := tokenState(msg)
	if err != nil {
		return st, err
	}
	return s.inShard(ctx, c, st, now)
}

// shown takes the fan off the concert's no-show watch: sent with every gated call's token check.
func (s *Store) shown(c ticketrush.QueueClaims) func() rueidis.Completed {
	return func() rueidis.Completed {
		return s.client.B().Zrem().Key(s.keys.Concert(c.ConcertID).NoShow()).Member(c.UserID).Build()
	}
}
