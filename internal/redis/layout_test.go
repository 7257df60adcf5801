package redis

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// asMap reads a JSON object for comparing two encodings field by field (cjson orders keys as it likes).
func asMap(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
	return m
}

// TestLayoutMatchesScripts checks the layout's encoders against what the scripts write: for each
// record the scripts make (the catalog hashes, a reservation held and paid, its seat states, a debit,
// the two kinds of idempotency record), the Go encoding of what Go decodes is the scripts' record. This
// is what restore writes and what reconcile and the load-test checker read.
func TestLayoutMatchesScripts(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		hget := func(key, field string) string {
			t.Helper()
			v, err := c.Do(ctx, c.B().Hget().Key(key).Field(field).Build()).ToString()
			require.NoError(t, err, "%s %s", key, field)
			return v
		}
		k := s.keys.Concert(cid)

		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second; q.Paused = false }, "alice")
		conc := concert(cid, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second; q.Paused = false })
		conc.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}, {ID: sB, StartsAt: t0}} // sale's
		sched, err := PlaceSeatSlots(ctx, c, k, conc, 0)
		require.NoError(t, err)
		meta, cfg := concertHashes(conc, sched)
		gotMeta, err := c.Do(ctx, c.B().Hgetall().Key(k.Meta()).Build()).AsStrMap()
		require.NoError(t, err)
		gotCfg, err := c.Do(ctx, c.B().Hgetall().Key(k.Cfg()).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, gotMeta, meta, "meta as concert_load writes it")
		assert.Equal(t, gotCfg, cfg, "cfg as concert_load writes it")

		// A hold: the record and the seat state.
		r, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 300, t0)
		require.NoError(t, err)
		raw := hget(slotOfConcert(t, s, cid, sA).Reservations(), r.ID)
		dec, err := decodeReservation(cid, raw)
		require.NoError(t, err)
		assert.Equal(t, r, dec)
		enc, err := encodeReservation(dec)
		require.NoError(t, err)
		assert.Equal(t, asMap(t, raw), asMap(t, enc), "a HELD reservation")
		_, flat := scanReservation(raw)
		assert.True(t, flat, "read without encoding/json: %s", raw)
		seat := hget(slotOfConcert(t, s, cid, sA).Seats(), "VIP-1")
		st, ok := parseSeatState(seat)
		require.True(t, ok, seat)
		assert.Equal(t, SeatState{Kind: SeatHeld, Reservation: r.ID, Expires: t0.Add(10 * time.Second).UnixMilli()}, st)
		assert.Equal(t, seat, st.String())

		// Being paid, then paid.
		_, err = s.Seats.Claim(ctx, "alice", r.ID, t0)
		require.NoError(t, err)
		seat = hget(slotOfConcert(t, s, cid, sA).Seats(), "VIP-1")
		st, ok = parseSeatState(seat)
		require.True(t, ok, seat)
		assert.Equal(t, SeatState{Kind: SeatPaying, Reservation: r.ID}, st)
		assert.Equal(t, seat, st.String())
		_, _, err = s.Wallet.Charge(ctx, "alice", 1000, "charge-key", "fp-charge", t0)
		require.NoError(t, err)
		d, err := s.Wallet.Debit(ctx, "alice", r.ID, 300, t0)
		require.NoError(t, err)
		paid, err := s.Seats.Complete(ctx, r.ID, d, t0)
		require.NoError(t, err)
		raw = hget(slotOfConcert(t, s, cid, sA).Reservations(), r.ID)
		enc, err = encodeReservation(paid)
		require.NoError(t, err)
		assert.Equal(t, asMap(t, raw), asMap(t, enc), "a PAID reservation")
		_, flat = scanReservation(raw)
		assert.True(t, flat, "read without encoding/json: %s", raw)
		seat = hget(slotOfConcert(t, s, cid, sA).Seats(), "VIP-1")
		st, ok = parseSeatState(seat)
		require.True(t, ok, seat)
		assert.Equal(t, SeatState{Kind: SeatSold, Reservation: r.ID}, st)
		assert.Equal(t, seat, st.String())

		// The debit.
		w := s.keys.Wallet("alice")
		raw = hget(w.Debits(), r.ID)
		mv, err := decodeMovement(r.ID, raw)
		require.NoError(t, err)
		assert.Equal(t, d, mv)
		enc, err = encodeMovement(ticketrush.LedgerEntry{ID: d.ID, UserID: "alice", Type: ticketrush.LedgerPayment, Amount: 300,
			BalanceAfter: 700, ReservationID: r.ID, CreatedAt: t0})
		require.NoError(t, err)
		assert.Equal(t, asMap(t, raw), asMap(t, enc), "a debit")
		_, flat = scanMovement(raw)
		assert.True(t, flat, "read without encoding/json: %s", raw)

		// The idempotency records of a charge and of a payment.
		get := func(key string) string {
			t.Helper()
			v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
			require.NoError(t, err, key)
			return v
		}
		raw = get(w.Idempotency("alice", "charge-key"))
		_, flat = scanIdempotency(raw)
		assert.True(t, flat, "read without encoding/json: %s", raw)
		charge := asMap(t, raw)
		enc, err = encodeIdempotency(ticketrush.IdempotencyRecord{UserID: "alice", Key: "charge-key", Kind: "charge",
			Fingerprint: "fp-charge", Ref: charge["id"].(string), At: t0, Amount: 1000, Balance: 1000})
		require.NoError(t, err)
		assert.Equal(t, charge, asMap(t, enc), "a charge's idempotency record")
		_, err = s.Wallet.Remember(ctx, "alice", "pay-key", "fp-pay", d.ID, true, t0)
		require.NoError(t, err)
		enc, err = encodeIdempotency(ticketrush.IdempotencyRecord{UserID: "alice", Key: "pay-key", Kind: "payment",
			Fingerprint: "fp-pay", Ref: d.ID, Created: true})
		require.NoError(t, err)
		raw = get(w.Idempotency("alice", "pay-key"))
		assert.Equal(t, asMap(t, raw), asMap(t, enc), "a payment's idempotency record")
		_, flat = scanIdempotency(raw)
		assert.True(t, flat, "read without encoding/json: %s", raw)
		_, err = s.Wallet.RememberRefusal(ctx, "alice", "refused-key", "fp-refused", "RESERVATION_EXPIRED", t0)
		require.NoError(t, err)
		enc, err = encodeIdempotency(ticketrush.IdempotencyRecord{UserID: "alice", Key: "refused-key", Kind: "payment",
			Fingerprint: "fp-refused", Refused: "RESERVATION_EXPIRED"})
		require.NoError(t, err)
		raw = get(w.Idempotency("alice", "refused-key"))
		assert.Equal(t, asMap(t, raw), asMap(t, enc), "a refusal's idempotency record")
		_, flat = scanIdempotency(raw)
		assert.True(t, flat, "read without encoding/json: %s", raw)
	})
}

func TestParseSeatState(t *testing.T) {
	tests := []struct {
		give string
		want SeatState
		ok   bool
	}{
		{"H|r1|1800000010000", SeatState{SeatHeld, "r1", 1800000010000}, true},
		{"P|r1", SeatState{SeatPaying, "r1", 0}, true},
		{"S|r1", SeatState{SeatSold, "r1", 0}, true},
		{"X|r1", SeatState{}, false},
		{"", SeatState{}, false},
		{"S", SeatState{}, false},
	}
	for _, tt := range tests {
		got, ok := parseSeatState(tt.give)
		assert.Equal(t, tt.ok, ok, tt.give)
		assert.Equal(t, tt.want, got, tt.give)
	}
}

// TestLayoutFollows: a cached layout follows a recorded placement only when it names the same seat
// slots in the same order (the cfg sched value), and any while none is recorded.
func TestLayoutFollows(t *testing.T) {
	recorded := func(slots string) ticketrush.Placement { return ticketrush.Placement{Slots: slots, Recorded: true} }
	spread := Layout{Shards: 3, Schedules: []SeatSlot{"s1@2", "s2"}}
	tests := []struct {
		name string
		give Layout
		p    ticketrush.Placement
		want bool
	}{
		{"the same slots", spread, recorded("s1@2,s2"), true},
		{"none recorded", spread, ticketrush.Placement{}, true},
		{"another suffix", spread, recorded("s1@3,s2"), false},
		{"a suffix more", spread, recorded("s1@2,s2@1"), false},
		{"a suffix less", spread, recorded("s1,s2"), false},
		{"a slot more", spread, recorded("s1@2,s2,s3"), false},
		{"a slot less", spread, recorded("s1@2"), false},
		{"other order", spread, recorded("s2,s1@2"), false},
		{"seats in the concert's slot", spread, recorded(""), false},
		{"one slot, recorded so", Layout{Shards: 1}, recorded(""), true},
		{"one slot, recorded spread", Layout{Shards: 3}, recorded("s1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.give.Follows(tt.p))
		})
	}
}
