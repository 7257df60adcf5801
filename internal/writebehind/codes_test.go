package writebehind

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/repair"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestAccessCodesRecordedAndRestored: a code's first user is recorded by the write-behind (code.claim),
// and after Redis is emptied restore brings every code back with its owner: the owner rejoins with it,
// another user is refused it, an unclaimed code still works.
func TestAccessCodesRecordedAndRestored(t *testing.T) {
	t.Parallel()
	s := newSale(t, dbtest.PrivateRedis(t), "tr", dbtest.Postgres(t), time.Minute)
	ctx := context.Background()
	run(t, s.worker(Config{}, prometheus.NewRegistry()))

	codes, err := s.cat.IssueAccessCodes(ctx, s.concert.ID, 2)
	require.NoError(t, err)
	_, err = s.cat.PatchQueue(ctx, s.concert.ID, ticketrush.QueuePatch{AccessCodeRequired: new(true)})
	require.NoError(t, err)
	with := func(code string) ticketrush.JoinPass {
		return ticketrush.JoinPass{CodeHash: ticketrush.HashAccessCode(code)}
	}
	tk, _, err := s.queue.JoinWith(ctx, "owner", s.concert.ID, with(codes[0]))
	require.NoError(t, err)
	require.NoError(t, s.queue.Leave(ctx, "owner", tk.Token))
	s.drain(30 * time.Second)

	stored, err := s.db.AccessCodes(ctx, s.concert.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{ticketrush.HashAccessCode(codes[0]): "owner", ticketrush.HashAccessCode(codes[1]): ""}, stored,
		"the record holds the codes by hash, with the first one's owner")

	require.NoError(t, s.rdb.Do(ctx, s.rdb.B().Flushall().Build()).Error())
	require.NoError(t, s.cat.Refresh(ctx))
	rep, err := repair.Restore(ctx, s.rdb, s.db, s.prefix, false, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 2, rep.AccessCodes)

	_, _, err = s.queue.JoinWith(ctx, "other", s.concert.ID, with(codes[0]))
	assert.ErrorIs(t, err, ticketrush.ErrAccessCodeInvalid, "the owner survives the restore")
	_, _, err = s.queue.JoinWith(ctx, "owner", s.concert.ID, with(codes[0]))
	assert.NoError(t, err, "the owner rejoins")
	_, _, err = s.queue.JoinWith(ctx, "third", s.concert.ID, with(codes[1]))
	assert.NoError(t, err, "an unclaimed code still works")
	_, _, err = s.queue.JoinWith(ctx, "fourth", s.concert.ID, ticketrush.JoinPass{})
	assert.ErrorIs(t, err, ticketrush.ErrAccessCodeRequired, "the setting survives the restore")
}
