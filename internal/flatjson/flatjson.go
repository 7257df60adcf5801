// Package flatjson reads the flat JSON objects the service meets on its hot paths, in one pass and
// without encoding/json: the records Redis's scripts return (a reservation, a debit, an idempotency
// record) and a JWT's header and claims. It reads only what it reads exactly as encoding/json would
// (FuzzFieldsReadAsEncodingJSONDoes); for anything else (an escape but \/, a float, a space, a nested
// value) Fields reports false, and its caller decodes with encoding/json, which reads every JSON.
package flatjson

import (
	"strconv"
	"strings"
)

// Fields calls field with each member of raw, a JSON object of members whose values are strings
// (printable ASCII, no escape but \/), integers (no fraction or exponent), true, false or null,
// written with no space: key, the value's text (a string's without its quotes) and whether it was a
// string. It reports false, having stopped, when raw is not such an object or when field returns
// false.
func Fields(raw string, field func(key, value string, quoted bool) bool) bool {
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return false
	}
	i, end := 1, len(raw)-1
	if i == end {
		return true // {}
	}
	for {
		key, next, ok := readString(raw, i)
		if !ok || next >= end || raw[next] != ':' {
			return false
		}
		value, quoted, after, ok := readValue(raw, next+1)
		if !ok || !field(key, value, quoted) {
			return false
		}
		if after == end {
			return true
		}
		if after > end || raw[after] != ',' {
			return false
		}
		i = after + 1
	}
}

// readString reads the string that starts at raw[i]: its text and the index after its closing quote.
// The one escape it reads is a slash's (\/, which cjson writes for every slash).
func readString(raw string, i int) (string, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return "", 0, false
	}
	slashes := false
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			if slashes {
				return strings.ReplaceAll(raw[i+1:j], `\/`, "/"), j + 1, true
			}
			return raw[i+1 : j], j + 1, true
		case c == '\\' && j+1 < len(raw) && raw[j+1] == '/':
			slashes = true
			j++
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", 0, false
		}
	}
	return "", 0, false
}

// readValue reads the value that starts at raw[i]: a string, an integer, true, false or null.
func readValue(raw string, i int) (value string, quoted bool, after int, ok bool) {
	if i >= len(raw) {
		return "", false, 0, false
	}
	switch c := raw[i]; {
	case c == '"':
		s, next, ok := readString(raw, i)
		return s, true, next, ok
	case c == '-' || c >= '0' && c <= '9':
		j := i
		if raw[j] == '-' {
			j++
		}
		start := j
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		if j == start || raw[start] == '0' && j-start > 1 {
			return "", false, 0, false // no digit, or a leading zero
		}
		return raw[i:j], false, j, true
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(raw)-i >= len(lit) && raw[i:i+len(lit)] == lit {
			return lit, false, i + len(lit), true
		}
	}
	return "", false, 0, false
}

// Int is an integer member's value; ok is false for anything else: a string, null, or an integer a
// float64 does not hold exactly (encoding/json reads a number into a float64 unless told otherwise).
func Int(value string, quoted bool) (n int64, ok bool) {
	if quoted {
		return 0, false
	}
	n, err := strconv.ParseInt(value, 10, 64)
	return n, err == nil && n >= -1<<53 && n <= 1<<53
}

// Bool is a boolean member's value; ok is false for anything else.
func Bool(value string, quoted bool) (b, ok bool) {
	return value == "true", !quoted && (value == "true" || value == "false")
}
