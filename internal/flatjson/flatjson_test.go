package flatjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFields(t *testing.T) {
	got := map[string]string{}
	require.True(t, Fields(`{"s":"a\/b","n":-12,"t":true,"f":false,"z":null,"e":""}`, func(k, v string, q bool) bool {
		if q {
			v = `"` + v + `"`
		}
		got[k] = v
		return true
	}))
	assert.Equal(t, map[string]string{"s": `"a/b"`, "n": "-12", "t": "true", "f": "false", "z": "null", "e": `""`}, got)
	assert.True(t, Fields(`{}`, func(string, string, bool) bool { return false }))
	assert.False(t, Fields(`{"a":1}`, func(string, string, bool) bool { return false }), "the caller stops it")

	for _, raw := range []string{``, `{`, `[]`, `{"a":1,}`, `{"a":1 }`, `{ "a":1}`, `{"a":01}`, `{"a":1.5}`, `{"a":1e3}`,
		`{"a":-}`, `{"a":"\u0041"}`, `{"a":"\n"}`, `{"a":"` + "\x01" + `"}`, `{"a":"caf` + "\xc3\xa9" + `"}`, `{"a":{}}`,
		`{"a":[1]}`, `{"a":tru}`, `{"a":nul}`, `{"a"1}`, `{a:1}`, `{"a":1}x`, `{"a":"x}`} {
		assert.False(t, Fields(raw, func(string, string, bool) bool { return true }), raw)
	}

	n, ok := Int("9007199254740992", false)
	assert.True(t, ok)
	assert.EqualValues(t, 1<<53, n)
	for _, v := range []string{"9007199254740993", "-9007199254740993", "99999999999999999999"} {
		_, ok := Int(v, false)
		assert.False(t, ok, "%s: a float64 does not hold it exactly", v)
	}
	_, ok = Int("12", true)
	assert.False(t, ok, "a string")
	b, ok := Bool("true", false)
	assert.True(t, b && ok)
	_, ok = Bool("null", false)
	assert.False(t, ok)
}

// FuzzFieldsReadAsEncodingJSONDoes: an object Fields reads, encoding/json reads too, to the same
// members: each string the same, each integer Int takes the same number, true, false and null the same.
func FuzzFieldsReadAsEncodingJSONDoes(f *testing.F) {
	for _, raw := range []string{`{}`, `{"a":"b"}`, `{"a":-0,"b":12,"c":true,"d":false,"e":null}`, `{"a":"x\/y\/"}`,
		`{"a":1,"a":2}`, `{"n":9007199254740993}`, `{"id":"r-1","seq":1,"status":"HELD"}`} {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		type member struct {
			value  string
			quoted bool
		}
		var members []member
		keys := []string{}
		if !Fields(raw, func(k, v string, q bool) bool {
			keys = append(keys, k)
			members = append(members, member{v, q})
			return true
		}) {
			return
		}
		var std map[string]any
		if err := json.Unmarshal([]byte(raw), &std); err != nil {
			t.Fatalf("Fields read %q, encoding/json refuses it: %v", raw, err)
		}
		last := map[string]member{} // a key given twice: the last one stands, as in encoding/json
		for i, k := range keys {
			last[k] = members[i]
		}
		require.Len(t, std, len(last), raw)
		for k, m := range last {
			want, ok := std[k]
			require.True(t, ok, "%s: %q", raw, k)
			switch {
			case m.quoted:
				assert.Equal(t, want, m.value, raw)
			case m.value == "null":
				assert.Nil(t, want, raw)
			case m.value == "true" || m.value == "false":
				b, ok := Bool(m.value, false)
				require.True(t, ok)
				assert.Equal(t, want, b, raw)
			default:
				if n, ok := Int(m.value, false); ok {
					assert.Equal(t, want, float64(n), raw)
				}
			}
		}
	})
}
