package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/lua"
)

// TestLoadScriptIsWhatTheServiceSends: the redis-benchmark row captures the service's EVALSHA of the
// hold script by its SHA, so the bench must load the text the service loads (lua.Source, its includes
// put in place), not the file as it is on disk.
func TestLoadScriptIsWhatTheServiceSends(t *testing.T) {
	c, _ := dbtest.MiniRedis(t)
	sha, err := loadScript(context.Background(), c, holdScript)
	require.NoError(t, err)
	assert.Equal(t, sha1Hex(lua.Source(holdScript)), sha)
	raw, err := os.ReadFile("../../lua/" + holdScript + ".lua")
	require.NoError(t, err)
	assert.NotEqual(t, sha1Hex(string(raw)), sha, "the file has includes: its own SHA is not the one sent")
}

// Fans admitted by admitSynthetic pass the hold script's queue check with the shared arrival until
// until, and the inspector reads that arrival back.
func TestAdmitSynthetic(t *testing.T) {
	ctx := context.Background()
	c, prefix := dbtest.Redis(t)
	s := redis.NewStore(c, prefix, prometheus.NewRegistry())
	t0 := time.UnixMilli(1_800_000_000_000).UTC()
	con := ticketrush.Concert{ID: "c1", Title: "T", Venue: "V", Queue: ticketrush.DefaultQueueSettings(),
		Sections:  []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 2}},
		Schedules: []ticketrush.Schedule{{ID: "s1", StartsAt: t0}}}
	loaded, err := s.LoadConcert(ctx, con, t0)
	require.NoError(t, err)
	require.True(t, loaded)
	require.NoError(t, admitSynthetic(ctx, c, s.Keys().Concert(con.ID), []string{"syn-1", "syn-2"}, 7, t0.Add(time.Hour)))
	seq, err := redis.NewInspector(c, prefix).ActiveSeq(ctx, con.ID, "syn-2")
	require.NoError(t, err)
	assert.EqualValues(t, 7, seq)
	_, _, err = s.Seats.Hold(ctx, ticketrush.QueueClaims{UserID: "syn-1", ConcertID: con.ID, Seq: 7}, "s1", "VIP-1", 100, t0)
	assert.NoError(t, err)
	_, _, err = s.Seats.Hold(ctx, ticketrush.QueueClaims{UserID: "syn-2", ConcertID: con.ID, Seq: 7}, "s1", "VIP-2", 100, t0.Add(2*time.Hour))
	assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "active until until")
}
