package http

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/flatjson"
)

// requestTypes are the bodies decode reads, one fresh value each.
var requestTypes = []func() any{
	func() any { return new(createConcertRequest) }, func() any { return new(patchQueueRequest) },
	func() any { return new(accessCodesRequest) }, func() any { return new(holdRequest) },
	func() any { return new(chargeRequest) }, func() any { return new(payRequest) },
	func() any { return new(joinRequest) },
}

// FuzzQuickDecode: quickDecode never takes a body decodeStrict refuses, and what it takes decodes to
// the same value. The seeds break each of strictJSON's rules once (they run in every go test).
func FuzzQuickDecode(f *testing.F) {
	for _, seed := range []string{
		`{"scheduleId":"a","seatId":"b"}`, ` {"scheduleId" : "a" , "seatId":"b"} ` + "\n",
		`{"scheduleId":"a","seatId":"b","seatId":"c"}`, // a field twice
		`{"scheduleId":"a","SeatId":"b"}`,              // a field name in another case
		`{"scheduleId":"a","seat":"b"}`,                // an unknown field
		`{"scheduleId":null,"seatId":"b"}`, `null`, `{"schedules":[null]}`,
		`{"scheduleId":"a"} {}`, `{"scheduleId":"a"}x`, `{"scheduleId":"a",}`, `{"scheduleId":"a"`,
		`{"scheduleId":"\u0061\"b","seatId":"\\"}`, `{"\u0073eatId":"b"}`, "{\"seatId\":\"a\x01\"}",
		`{"amount":1}`, `{"amount":"1"}`, `{"amount":1e400}`, `{"amount":{"a":1}}`, `{"amount":tru}`,
		`{"reservationId":"x"}`, `{"count":5}`, `{"count":5.5}`, `{"count":-0}`,
		`{"accessCode":"A","challenge":"c","nonce":"n"}`,
		`{"title":"t","venue":"v","schedules":["2026-12-24T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}],"queue":{"joinPowBits":3}}`,
		`{"schedules":["nope"]}`, `{"sections":[{"name":"A","name":"B"}]}`, `{"sections":[{"Name":"A"}]}`,
		`{"activeCapacity":1e400}`, `[`, `[]`, `{}`, `"x"`, `1`, "\xff", `{"scheduleId":"\xff"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, newValue := range requestTypes {
			quick, strict := newValue(), newValue()
			if !quickDecode([]byte(body), quick) {
				continue
			}
			require.NoError(t, decodeStrict([]byte(body), strict), "quickDecode took a body decodeStrict refuses: %s into %T", body, quick)
			assert.Equal(t, strict, quick, "%s", body)
		}
	})
}

// TestQuickDecodeTakesPlainBodies: the bodies clients send go the quick way (a quickDecode that
// always declines would pass FuzzQuickDecode and save nothing).
func TestQuickDecodeTakesPlainBodies(t *testing.T) {
	tests := []struct {
		give string
		into any
	}{
		{`{"scheduleId":"s1","seatId":"R-1"}`, new(holdRequest)},
		{`{"amount":5000}`, new(chargeRequest)},
		{`{"reservationId":"r1"}`, new(payRequest)},
		{`{"title":"t","venue":"v","schedules":["2026-12-24T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}]}`, new(createConcertRequest)},
	}
	for _, tt := range tests {
		want := reflect.New(reflect.TypeOf(tt.into).Elem()).Interface()
		require.NoError(t, decodeStrict([]byte(tt.give), want))
		assert.True(t, quickDecode([]byte(tt.give), tt.into), "%s", tt.give)
		assert.Equal(t, want, tt.into)
	}
}

// TestHotBodiesReadFlat: a hold's and a payment's bodies, as clients send them, are read by flatjson
// (quickDecode's json.Unmarshal was a quarter of a hold handler's CPU), to what decodeStrict reads.
func TestHotBodiesReadFlat(t *testing.T) {
	for _, tt := range []struct {
		give   string
		into   flatBody
		strict any
	}{
		{`{"scheduleId":"s1","seatId":"R-1"}`, new(holdRequest), new(holdRequest)},
		{`{"seatId":"R-1","scheduleId":"s1"}`, new(holdRequest), new(holdRequest)},
		{`{"reservationId":"r1"}`, new(payRequest), new(payRequest)},
	} {
		require.True(t, flatjson.Fields(tt.give, tt.into.decodeFlat), tt.give)
		require.NoError(t, decodeStrict([]byte(tt.give), tt.strict))
		assert.Equal(t, tt.strict, tt.into, tt.give)
		quick := reflect.New(reflect.TypeOf(tt.strict).Elem()).Interface()
		require.True(t, quickDecode([]byte(tt.give), quick), tt.give)
		assert.Equal(t, tt.strict, quick, tt.give)
	}
	for _, give := range []string{`{"scheduleId":5,"seatId":"R-1"}`, `{"scheduleId":"s1","seat":"R-1"}`} {
		assert.False(t, flatjson.Fields(give, new(holdRequest).decodeFlat), give)
	}
	assert.False(t, flatjson.Fields(`{"reservation":"r1"}`, new(payRequest).decodeFlat))
}
