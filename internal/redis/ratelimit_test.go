package redis

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestUserRateLimitAcrossInstances: two stores (two instances) on one Redis share each user's bucket: a
// user sending 100 calls in one second of the scripts' clock is served burst of them, then rate a
// second, however the calls are split between the instances; a limited call changes nothing.
func TestUserRateLimitAcrossInstances(t *testing.T) {
	eachBackend(t, func(t *testing.T, a *Store, c rueidis.Client) {
		ctx := context.Background()
		b := NewStore(c, a.keys.prefix, prometheus.NewRegistry())
		lim := UserLimit{Rate: 20, Burst: 40}
		a.LimitUsers(lim)
		b.LimitUsers(lim)
		stores := []*Store{a, b}

		var served, limited atomic.Int64
		var wg sync.WaitGroup
		for i := range 100 { // 100 charges within the same second, spread over both instances at once
			wg.Go(func() {
				_, _, err := stores[i%2].Wallet.Charge(ctx, "fan-1", 1, "", "", t0)
				switch {
				case err == nil:
					served.Add(1)
				case assert.ErrorIs(t, err, ticketrush.ErrRateLimited):
					limited.Add(1)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int64(lim.Burst), served.Load(), "at once, burst calls and no more")
		assert.Equal(t, int64(100), served.Load()+limited.Load())
		bal, err := a.Wallet.Balance(ctx, "fan-1")
		require.NoError(t, err)
		assert.Equal(t, served.Load(), bal, "a limited charge charged nothing")

		// A fresh user gets burst, then rate a second.
		n := 0
		for i := range 100 {
			if _, _, err := stores[i%2].Wallet.Charge(ctx, "fan-2", 1, "", "", t0); err == nil {
				n++
			}
		}
		assert.Equal(t, lim.Burst, n)
		later := t0.Add(time.Second)
		n = 0
		for i := range 100 {
			if _, _, err := stores[i%2].Wallet.Charge(ctx, "fan-2", 1, "", "", later); err == nil {
				n++
			}
		}
		assert.Equal(t, lim.Rate, n, "a second later, rate calls more")

		// Every state-changing script counts: joins and holds of one user share the concert's bucket.
		cc := concert(ticketrush.NewID(), nil)
		cc.Schedules[0].ID = ticketrush.NewID()
		mustLoad(t, a, cc)
		res := ticketrush.NewReservationID(cc.ID, cc.Schedules[0].ID)
		a.LimitUsers(UserLimit{Rate: 1, Burst: 2})
		_, err = a.Line.Join(ctx, cc.ID, "fan-3", t0)
		require.NoError(t, err)
		_, err = a.Line.Join(ctx, cc.ID, "fan-3", t0)
		require.NoError(t, err)
		_, err = a.Line.Join(ctx, cc.ID, "fan-3", t0)
		assert.ErrorIs(t, err, ticketrush.ErrRateLimited)
		_, _, err = a.Seats.Hold(ctx, ticketrush.QueueClaims{ConcertID: cc.ID, UserID: "fan-3", Seq: 1}, cc.Schedules[0].ID, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrRateLimited)
		_, err = a.Seats.Cancel(ctx, "fan-3", res, t0)
		assert.ErrorIs(t, err, ticketrush.ErrRateLimited)
		_, err = a.Seats.Claim(ctx, "fan-3", res, t0)
		assert.ErrorIs(t, err, ticketrush.ErrRateLimited)
		_, err = a.Line.Join(ctx, cc.ID, "fan-4", t0)
		assert.NoError(t, err, "another user has a bucket of their own")

		a.LimitUsers(UserLimit{})
		for i := range 50 {
			_, _, err := a.Wallet.Charge(ctx, "fan-5", 1, "", "", t0)
			require.NoError(t, err, "limit off: call %s", strconv.Itoa(i))
		}
	})
}
