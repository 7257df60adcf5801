package http

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzJSONString: appendJSONString writes a string exactly as encoding/json does, or declines.
func FuzzJSONString(f *testing.F) {
	for _, seed := range []string{"", "R-1", `a"b\c`, "<script>&amp;", "tab\there\nline\r\x00\x1f\x7f", "é", "\u2028", "\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := appendJSONString(nil, s)
		if !ok {
			return
		}
		want, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	})
}

func TestJSONStringTakesASCII(t *testing.T) {
	for _, s := range []string{"R-1", `the field "x" is given twice`, "<&>\n"} {
		_, ok := appendJSONString(nil, s)
		assert.True(t, ok, "%q", s) // an appender that always declines writes nothing wrong, and saves nothing
	}
}

// fill sets every field of the struct v points to a value of its own, so that a field the appender
// leaves out, or writes in another order or under another name, shows against json.Marshal.
func fill(t *testing.T, v any, salt string) {
	t.Helper()
	e := reflect.ValueOf(v).Elem()
	for i := 0; i < e.NumField(); i++ {
		f := e.Field(i)
		if f.Kind() == reflect.Pointer { // an optional field: set, here (its null is the zero value's)
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		}
		switch {
		case f.Type() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf(time.Date(2026, 12, 24, 10, i, 7, 123_000_000*i, time.UTC)))
		case f.Kind() == reflect.String:
			f.SetString(e.Type().Field(i).Name + "-" + salt)
		case f.Kind() == reflect.Int, f.Kind() == reflect.Int64:
			f.SetInt(int64(1000 + i))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("fill: field %s of kind %s: teach fill and the appender about it", e.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestRepliesMatchEncodingJSON: every reply with an appender writes what encoding/json writes; a field
// added to reservationJSON, problem or ticketJSON without the appender fails here.
func TestRepliesMatchEncodingJSON(t *testing.T) {
	for _, salt := range []string{"a", `q"<&>`, "nl\n"} {
		var res reservationJSON
		fill(t, &res, salt)
		var p problem
		fill(t, &p, salt)
		var tk ticketJSON
		fill(t, &tk, salt)
		waiting := ticketJSON{Token: "tk-" + salt, ConcertID: "c", Status: "WAITING", Position: 7, PollAfterSeconds: 3} // every optional field null
		for _, v := range []any{res, p, problem{Type: "about:blank", Title: "T", Status: 409, Code: "SEAT_UNAVAILABLE"}, tk, waiting} {
			var want bytes.Buffer
			require.NoError(t, json.NewEncoder(&want).Encode(v))
			got, ok := appendReply(nil, v)
			require.True(t, ok, "%#v", v)
			assert.Equal(t, want.String(), string(got))
		}
	}
	// Times outside UTC, and past what MarshalJSON takes: the same bytes, or the appender declines.
	for _, at := range []time.Time{time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 5*3600+30*60)),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("y", 17)), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), {}} {
		res := reservationJSON{ID: "r", ExpiresAt: at, CreatedAt: at}
		got, ok := appendReply(nil, res)
		want, err := json.Marshal(res)
		if !ok {
			continue
		}
		require.NoError(t, err, strconv.Quote(at.String()))
		assert.Equal(t, string(want)+"\n", string(got))
	}
}
