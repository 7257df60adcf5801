package redis

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// What the Redis benchmark (loadtest/bench) writes beside the scripts.

// AdmitSynthetic makes users ACTIVE in a concert until until, each with the token of arrival seq,
// written as queue_join and queue_tick leave an admitted fan (the aseq hash and the active zset) but
// without a line, a pipeline per 1000 users: the benchmark's synthetic fans, which replay one captured
// hold call and so must share its arrival sequence (the scripts give every fan one of their own).
func AdmitSynthetic(ctx context.Context, rdb rueidis.Client, k ConcertKeys, users []string, seq uint64, until time.Time) error {
	score, arrival := float64(until.UnixMilli()), utoa(seq)
	for lo := 0; lo < len(users); lo += 1000 {
		batch := users[lo:min(lo+1000, len(users))]
		cmds := make(rueidis.Commands, 0, 2*len(batch))
		for _, user := range batch {
			cmds = append(cmds, rdb.B().Hset().Key(k.ActiveSeq()).FieldValue().FieldValue(user, arrival).Build(),
				rdb.B().Zadd().Key(k.Active()).ScoreMember().ScoreMember(score, user).Build())
		}
		for _, res := range rdb.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				return err
			}
		}
	}
	return nil
}
