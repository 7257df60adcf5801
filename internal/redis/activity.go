package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Wake records that someone was seen at each of the concerts at now, in one command: the live zset keeps
// the latest time per concert (GT), whichever instance wrote it.
func (s *Store) Wake(ctx context.Context, concertIDs []string, now time.Time) error {
	if len(concertIDs) == 0 {
		return nil
	}
	cmd := s.client.B().Zadd().Key(s.keys.Live()).Gt().ScoreMember()
	score := float64(now.UnixMilli())
	for _, id := range concertIDs {
		cmd = cmd.ScoreMember(score, id)
	}
	if err := s.client.Do(ctx, cmd.Build()).Error(); err != nil {
		return fmt.Errorf("wake concerts: %w", unavailable(err))
	}
	return nil
}

// Awake returns the concerts seen since since, with when each was last seen, in one command.
func (s *Store) Awake(ctx context.Context, since time.Time) (map[string]time.Time, error) {
	cmd := s.client.B().Zrange().Key(s.keys.Live()).Min(strconv.FormatInt(since.UnixMilli(), 10)).Max("+inf").
		Byscore().Withscores().Build()
	zs, err := s.client.Do(ctx, cmd).AsZScores()
	if err != nil {
		return nil, fmt.Errorf("awake concerts: %w", unavailable(err))
	}
	out := make(map[string]time.Time, len(zs))
	for _, z := range zs {
		out[z.Member] = time.UnixMilli(int64(z.Score))
	}
	return out, nil
}

// ForgetAsleep drops from the live zset the concerts not seen since before, so that it holds only
// concerts with recent fans.
func (s *Store) ForgetAsleep(ctx context.Context, before time.Time) error {
	cmd := s.client.B().Zremrangebyscore().Key(s.keys.Live()).Min("-inf").Max("(" + strconv.FormatInt(before.UnixMilli(), 10)).Build()
	if err := s.client.Do(ctx, cmd).Error(); err != nil {
		return fmt.Errorf("forget asleep concerts: %w", unavailable(err))
	}
	return nil
}
