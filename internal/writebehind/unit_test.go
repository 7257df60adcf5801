package writebehind

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func TestDecode(t *testing.T) {
	const concert = "c0ncert00001"
	res := concert + "sched0000001" + "r00000000001"
	shard := redis.WalletShard("alice")
	csrc := &source{stream: "tr:{c:" + concert + "}:events", concertID: concert}
	wsrc := &source{stream: "tr:{w:" + strconv.Itoa(shard) + "}:events", shard: shard}
	tests := []struct {
		name   string
		src    *source
		fields map[string]string
		want   string // "" for an event that decodes
	}{
		{"charge", wsrc, map[string]string{"type": "point.charge", "id": "c1", "user": "alice", "amount": "100", "balance": "100", "at": "1"}, ""},
		{"charge with a key", wsrc, map[string]string{"type": "point.charge", "id": "c1", "user": "alice", "amount": "100", "balance": "100", "at": "1", "idem": "k", "fp": "f"}, ""},
		{"debit", wsrc, map[string]string{"type": "point.debit", "id": "p" + res, "res": res, "user": "alice", "amount": "1e3", "balance": "0", "at": "1"}, ""},
		{"debit without its reservation", wsrc, map[string]string{"type": "point.debit", "id": "p1", "user": "alice", "amount": "100", "balance": "0", "at": "1"}, `"res" is missing`},
		{"a user of another shard", wsrc, map[string]string{"type": "point.charge", "id": "c1", "user": "bob-" + strconv.Itoa(shard+1), "amount": "1", "balance": "1", "at": "1"}, "not of wallet shard"},
		{"an amount that is not a number", wsrc, map[string]string{"type": "point.charge", "id": "c1", "user": "alice", "amount": "lots", "balance": "1", "at": "1"}, "not an integer"},
		{"idempotency record", wsrc, map[string]string{"type": "idem.remember", "user": "alice", "key": "k", "fp": "f", "ref": "p1", "created": "1", "at": "1"}, ""},
		{"unknown wallet event", wsrc, map[string]string{"type": "point.gift", "user": "alice"}, "unknown wallet event"},
		{"hold", csrc, map[string]string{"type": "hold.create", "res": res, "user": "u", "schedule": "sched0000001", "seat": "A-1", "price": "5", "expires": "9", "seq": "3", "at": "1"}, ""},
		{"claim", csrc, map[string]string{"type": "payment.claim", "res": res, "user": "u", "at": "1"}, ""},
		{"a reservation of another concert", csrc, map[string]string{"type": "payment.claim", "res": "x0ncert00001sched0000001r00000000001", "user": "u", "at": "1"}, "not one of concert"},
		{"a reservation of another schedule", csrc, map[string]string{"type": "hold.lapse", "res": res, "user": "u", "schedule": "sched0000002", "seat": "A-1", "at": "1"}, "of schedule"},
		{"a sale without its payment", csrc, map[string]string{"type": "sale", "res": res, "user": "u", "schedule": "sched0000001", "seat": "A-1", "price": "5", "at": "1"}, `"payment" is missing`},
		{"queue", csrc, map[string]string{"type": "queue.leave", "user": "u", "seq": "4", "from": "WAITING", "ord": "2", "at": "1"}, ""},
		{"abandoned", csrc, map[string]string{"type": "queue.abandon", "user": "u", "seq": "4", "seen": "1", "at": "3"}, ""},
		{"sold out", csrc, map[string]string{"type": "concert.soldout", "sold": "2", "at": "1"}, ""},
		{"no time", csrc, map[string]string{"type": "queue.join", "user": "u", "seq": "4"}, `"at" is missing`},
		{"no type", csrc, map[string]string{"user": "u"}, `"type" is missing`},
		{"unknown concert event", csrc, map[string]string{"type": "hold.teleport", "at": "1"}, "unknown concert event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b ticketrush.RecordBatch
			err := decode(entry{src: tt.src, id: "1-0", fields: tt.fields}, &b)
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, 1, b.Len(), "one home row per event")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestDeadLetterStream(t *testing.T) {
	assert.Equal(t, "tr:{w:3}:dead", DeadLetterStream("tr:{w:3}:events"))
	assert.Equal(t, "tr:{c:abc}:dead", DeadLetterStream("tr:{c:abc}:events"))
}

// down is a record that never answers.
type down struct{}

func (down) WriteRecords(context.Context, ticketrush.RecordBatch) error {
	return errors.New("dial tcp: connection refused")
}

// A worker that cannot write while events wait fails its readiness check once StuckAfter has passed
// without an acknowledgement, and keeps the entries: nothing is dead-lettered for Postgres' sake.
func TestStuckWorkerIsNotReady(t *testing.T) {
	t.Parallel()
	s := sharedSale(t)
	reg := prometheus.NewRegistry()
	w := New(s.rdb, down{}, s.prefix, s.cat.IDs, Config{StuckAfter: 300 * time.Millisecond, StatsEvery: 50 * time.Millisecond,
		RetryMax: 50 * time.Millisecond}, time.Now, s.log, reg)
	require.NoError(t, w.Check(context.Background()), "ready before it starts")
	run(t, w)
	_, _, err := s.booking.Charge(context.Background(), "alice", 100, "")
	require.NoError(t, err)
	eventually(t, 10*time.Second, "the worker reports itself stuck", func() bool { return w.Check(context.Background()) != nil })
	assert.Contains(t, w.Check(context.Background()).Error(), "not advanced")
	assert.Positive(t, metric(t, reg, "ticketrush_writebehind_backlog_events"))
	assert.Positive(t, metric(t, reg, "ticketrush_writebehind_lag_seconds"))
	assert.Zero(t, metric(t, reg, "ticketrush_writebehind_dead_letters_total"))
}
