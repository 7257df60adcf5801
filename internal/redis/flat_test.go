package redis

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Records as the scripts write them (a HELD and a PAID reservation, a debit, the idempotency records of
// a charge and of a payment, whose fingerprint cjson writes with its slashes escaped).
const (
	heldRecord    = `{"id":"concert00001schedule000avc1g3gzdglxv","user":"fan-1234","seq":1235,"schedule":"schedule000a","seat":"R-1235","price":10,"status":"HELD","expiresAt":1800003600000,"createdAt":1800000000000}`
	paidRecord    = `{"id":"concert00001schedule000avc1g3gzdglxv","user":"fan-1234","seq":1235,"schedule":"schedule000a","seat":"R-1235","price":10,"status":"PAID","expiresAt":1800003600000,"createdAt":1800000000000,"payment":"pconcert00001schedule000avc1g3gzdglxv","paidAt":1800000006000,"balance":990}`
	debitRecord   = `{"balance":990,"id":"pconcert00001schedule000avc1g3gzdglxv","at":1800000006000,"user":"fan-1234","amount":10}`
	chargeIdem    = `{"balance":1000,"amount":1000,"id":"c-1","fingerprint":"fp-charge","at":1800000000000}`
	paymentIdem   = `{"ref":"pconcert00001schedule000avc1g3gzdglxv","created":true,"fingerprint":"POST \/v1\/payments concert00001schedule000avc1g3gzdglxv"}`
	reservedIdem  = `{"pending":true,"created":false,"ref":"p-1","fingerprint":"POST \/v1\/payments r-1"}`
	otherLayout   = `{"id": "r-1", "user": "u"}`
	escapedRecord = `{"id":"r\u002d1","user":"u"}`
)

// TestFlatRecords: the records the scripts write are read by flatjson.Fields (no encoding/json), to the
// values encoding/json reads from them; anything else is left to encoding/json.
func TestFlatRecords(t *testing.T) {
	for _, raw := range []string{heldRecord, paidRecord} {
		var std reservationRecord
		flat, ok := scanReservation(raw)
		require.True(t, ok, raw)
		require.NoError(t, json.Unmarshal([]byte(raw), &std))
		assert.Equal(t, std, flat)
	}
	var stdD movementRecord
	flatD, ok := scanMovement(debitRecord)
	require.True(t, ok)
	require.NoError(t, json.Unmarshal([]byte(debitRecord), &stdD))
	assert.Equal(t, stdD, flatD)
	for _, raw := range []string{chargeIdem, paymentIdem, reservedIdem} {
		var std idempotencyRecord
		flat, ok := scanIdempotency(raw)
		require.True(t, ok, raw)
		require.NoError(t, json.Unmarshal([]byte(raw), &std))
		assert.Equal(t, std, flat)
	}
	assert.Equal(t, "POST /v1/payments r-1", func() string {
		rec, err := decodeIdempotency(reservedIdem)
		require.NoError(t, err)
		return rec.Fingerprint
	}(), "cjson's escaped slashes read as slashes")

	for _, raw := range []string{otherLayout, escapedRecord, `{"id":"r-1","seq":1.5}`, `{"id":"r-1","seq":01}`,
		`{"id":"r-1","seq":9007199254740993}`, `{"ID":"r-1"}`, `{"id":"r-1","x":{}}`, `{"id":null}`, `{"id":"r-1",}`,
		`{"id":"r-1"`, `{"id":"caf` + "\xc3\xa9" + `"}`, `{"balance":null}`} {
		_, ok := scanReservation(raw)
		assert.False(t, ok, raw)
	}
	r, err := decodeReservation("c", escapedRecord)
	require.NoError(t, err)
	assert.Equal(t, "r-1", r.ID, "read by encoding/json")
	_, err = decodeReservation("c", `{"id":"r-1"`)
	assert.Error(t, err)
}

// FuzzFlatRecordsDecodeAsJSON: whatever flatjson.Fields reads, encoding/json reads too, to the same record,
// for each kind of record.
func FuzzFlatRecordsDecodeAsJSON(f *testing.F) {
	for _, raw := range []string{heldRecord, paidRecord, debitRecord, chargeIdem, paymentIdem, reservedIdem, otherLayout,
		escapedRecord, `{}`, `{"seq":-0}`, `{"seq":-9007199254740992}`, `{"created":false,"pending":true}`,
		`{"id":"a\/b\/"}`, `{"balance":0,"balance":1}`, `{"seq":9007199254740993}`} {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		check := func(flat, std any, scanned bool) {
			if !scanned {
				return
			}
			if err := json.Unmarshal([]byte(raw), std); err != nil {
				t.Fatalf("flatjson.Fields read %q, encoding/json refuses it: %v", raw, err)
			}
			assert.Equal(t, std, flat, raw)
		}
		var rs reservationRecord
		r, ok := scanReservation(raw)
		check(&r, &rs, ok)
		var ds movementRecord
		d, ok := scanMovement(raw)
		check(&d, &ds, ok)
		var is idempotencyRecord
		i, ok := scanIdempotency(raw)
		check(&i, &is, ok)
	})
}

// BenchmarkDecodeRecords: a payment's records decoded as the store does, and by encoding/json alone.
// `go test -run x -bench DecodeRecords ./internal/redis`
func BenchmarkDecodeRecords(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, err1 := decodeReservation("c", paidRecord)
			_, err2 := decodeMovement("r", debitRecord)
			_, err3 := decodeIdempotency(paymentIdem)
			if err1 != nil || err2 != nil || err3 != nil {
				b.Fatal(err1, err2, err3)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r reservationRecord
			var d movementRecord
			var i idempotencyRecord
			err1 := json.Unmarshal([]byte(paidRecord), &r)
			err2 := json.Unmarshal([]byte(debitRecord), &d)
			err3 := json.Unmarshal([]byte(paymentIdem), &i)
			if err1 != nil || err2 != nil || err3 != nil {
				b.Fatal(err1, err2, err3)
			}
		}
	})
}
