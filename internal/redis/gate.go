package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// gated checks a gated call's token and runs the reads in one round trip, returning their replies. A
// gated call is the fan showing up (noShowSeconds): the check takes them off the no-show watch. Where
// the check runs is the line's (lineWay.gated): the concert's slot, or the fan's shard.
func (s *core) gated(ctx context.Context, c ticketrush.QueueClaims, now time.Time, reads ...func() rueidis.Completed) (ticketrush.TokenState, []rueidis.RedisResult, error) {
	w, err := s.ways(ctx, c.ConcertID)
	if err != nil {
		return ticketrush.TokenState{}, nil, err
	}
	return w.line.gated(ctx, c, now, reads...)
}

// gatedOnConcert is gated on the concert's slot: the token status script, the show-up and the reads in
// one round trip.
func (s *core) gatedOnConcert(ctx context.Context, c ticketrush.QueueClaims, now time.Time, reads ...func() rueidis.Completed) (ticketrush.TokenState, []rueidis.RedisResult, error) {
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

// gatedOnShard is gated on the fan's line shard (gateShow), the reads sent meanwhile: one round trip
// each, side by side, and none on the concert's slot for an ACTIVE fan.
func (s *core) gatedOnShard(ctx context.Context, g gateAt, c ticketrush.QueueClaims, now time.Time, reads ...func() rueidis.Completed) (ticketrush.TokenState, []rueidis.RedisResult, error) {
	var data []rueidis.RedisResult
	done := make(chan struct{})
	if len(reads) == 0 {
		close(done) // the token alone (Gate): nothing to send beside it
	} else {
		cmds := make(rueidis.Commands, len(reads))
		for i, r := range reads {
			cmds[i] = r()
		}
		go func() {
			defer close(done)
			data = s.client.DoMulti(ctx, cmds...)
		}()
	}
	st, err := s.gateShow(ctx, g, c, now)
	<-done
	if err != nil {
		return ticketrush.TokenState{}, data, fmt.Errorf("token status: %w", err)
	}
	return st, data, nil
}

// inShard is the state of a token the concert's slot found gone (EXPIRED): for a line spread over
// shards, the fan may still be WAITING in their shard (a refusal's path only: no round trip more for
// an ACTIVE token).
func (s *core) inShard(ctx context.Context, c ticketrush.QueueClaims, st ticketrush.TokenState, now time.Time) (ticketrush.TokenState, error) {
	if st.Status != ticketrush.StatusExpired {
		return st, nil
	}
	w, err := s.ways(ctx, c.ConcertID)
	if err != nil {
		return st, err
	}
	return w.line.expired(ctx, c, st, now)
}

// Gate checks a gated call's token: its state, and the fan shown up (off the no-show watch), in one
// round trip, as the gated reads do but without a read of their own (the seat view serves the seat map
// from memory).
func (s *Seats) Gate(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	st, _, err := s.gated(ctx, c, now)
	return st, err
}

// shown takes the fan off the concert's no-show watch: sent with every gated call's token check.
func (s *core) shown(c ticketrush.QueueClaims) func() rueidis.Completed {
	return func() rueidis.Completed {
		return s.client.B().Zrem().Key(s.keys.Concert(c.ConcertID).NoShow()).Member(c.UserID).Build()
	}
}
