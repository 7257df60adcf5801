package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// BenchmarkReplicaWait is what waiting for a replica costs each replicated step on the shared Redis
// Cluster (scripts/cluster.sh): one call after another, so ns/op is the step's latency with and without
// WAIT 1 in its pipeline. `go test -run x -bench ReplicaWait -benchtime 2000x ./internal/redis`
func BenchmarkReplicaWait(b *testing.B) {
	for _, wait := range []bool{false, true} {
		name := "nowait"
		if wait {
			name = "wait"
		}
		newStore := func(b *testing.B) *Store {
			c, prefix := dbtest.Cluster(b)
			s := NewStore(c, prefix, prometheus.NewRegistry())
			if wait {
				s.WaitForReplica(config.ReplicaWait)
			}
			c0 := concert(cid, func(q *ticketrush.QueueSettings) {
				q.HoldTTL = time.Hour
				q.AdmitPerSecond = 1_000_000
				q.ActiveCapacity = 1_000_000
			})
			c0.Sections = []ticketrush.Section{{Name: "R", Price: 10, Seats: 100_000}}
			c0.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}}
			loaded, err := s.LoadConcert(context.Background(), c0, t0)
			require.NoError(b, err)
			require.True(b, loaded)
			return s
		}
		ctx := context.Background()
		// fans joins n fans (a fan's holds are counted on each hold: one hold each keeps ops alike).
		fans := func(b *testing.B, s *Store, n int) []ticketrush.QueueClaims {
			out := make([]ticketrush.QueueClaims, n)
			for i := range out {
				user := fmt.Sprintf("fan-%d", i)
				j, err := s.Line.Join(ctx, cid, user, t0)
				require.NoError(b, err)
				out[i] = ticketrush.QueueClaims{UserID: user, ConcertID: cid, Seq: j.Seq}
			}
			return out
		}
		b.Run("hold/"+name, func(b *testing.B) {
			s := newStore(b)
			claims := fans(b, s, b.N)
			b.ResetTimer()
			for i := range b.N {
				if _, _, err := s.Seats.Hold(ctx, claims[i], sA, fmt.Sprintf("R-%d", i+1), 10, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("join/"+name, func(b *testing.B) {
			s := newStore(b)
			b.ResetTimer()
			fans(b, s, b.N)
		})
		b.Run("cancel/"+name, func(b *testing.B) {
			s := newStore(b)
			claims := fans(b, s, b.N)
			ids := make([]string, b.N)
			for i, c := range claims {
				r, _, err := s.Seats.Hold(ctx, c, sA, fmt.Sprintf("R-%d", i+1), 10, t0)
				require.NoError(b, err)
				ids[i] = r.ID
			}
			b.ResetTimer()
			for i, id := range ids {
				if _, err := s.Seats.Cancel(ctx, claims[i].UserID, id, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("charge/"+name, func(b *testing.B) {
			s := newStore(b)
			b.ResetTimer()
			for i := range b.N {
				if _, _, err := s.Wallet.Charge(ctx, fmt.Sprintf("fan-%d", i%1000), 10, "", "", t0); err != nil {
					b.Fatal(err)
				}
			}
		})
		// pay: claim, debit and complete of one reservation (three replicated steps on two masters).
		b.Run("pay/"+name, func(b *testing.B) {
			s := newStore(b)
			claims := fans(b, s, b.N)
			ids := make([]string, b.N)
			for i, c := range claims {
				_, _, err := s.Wallet.Charge(ctx, c.UserID, 10, "", "", t0)
				require.NoError(b, err)
				r, _, err := s.Seats.Hold(ctx, c, sA, fmt.Sprintf("R-%d", i+1), 10, t0)
				require.NoError(b, err)
				ids[i] = r.ID
			}
			b.ResetTimer()
			for i, id := range ids {
				user := claims[i].UserID
				if _, err := s.Seats.Claim(ctx, user, id, t0); err != nil {
					b.Fatal(err)
				}
				d, err := s.Wallet.Debit(ctx, user, id, 10, t0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Seats.Complete(ctx, id, d, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
