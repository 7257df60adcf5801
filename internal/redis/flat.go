package redis

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The records the scripts return (a reservation, a debit, an idempotency record) are flat JSON objects
// of plain strings and integers, written without spaces. A payment decodes five of them; with
// encoding/json that was 9% of the service's CPU in make bench's payments. flatFields reads such an
// object in one pass (allocating only for a string with an escaped slash), and hands anything else (an
// escape, a float, a space, a key it does not know) back to encoding/json, which reads every JSON: a
// record decodes to the same value either way (FuzzFlatRecordsDecodeAsJSON).

// decodeRecord reads raw, a record of type T, by scan (flatFields) or, when that cannot read it, by
// encoding/json.
func decodeRecord[T any](raw string, scan func(string) (T, bool)) (T, error) {
	if rec, ok := scan(raw); ok {
		return rec, nil
	}
	var rec T
	err := json.Unmarshal([]byte(raw), &rec)
	return rec, err
}

// flatFields calls field with each member of raw, a JSON object of members whose values are strings
// (printable ASCII, no escape but \/), integers (no fraction or exponent), true, false or null,
// written with no space: key, the value's text (a string's without its quotes) and whether it was a
// string. It reports false, having stopped, when raw is not such an object or when field returns
// false.
func flatFields(raw string, field func(key, value string, quoted bool) bool) bool {
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return false
	}
	i, end := 1, len(raw)-1
	if i == end {
		return true // {}
	}
	for {
		key, next, ok := flatString(raw, i)
		if !ok || next >= end || raw[next] != ':' {
			return false
		}
		value, quoted, after, ok := flatValue(raw, next+1)
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

// flatString reads the string that starts at raw[i]: its text and the index after its closing quote.
// The one escape it reads is cjson's of a slash (\/: a payment's fingerprint has two).
func flatString(raw string, i int) (string, int, bool) {
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

// flatValue reads the value that starts at raw[i]: a string, an integer, true, false or null.
func flatValue(raw string, i int) (value string, quoted bool, after int, ok bool) {
	if i >= len(raw) {
		return "", false, 0, false
	}
	switch c := raw[i]; {
	case c == '"':
		s, next, ok := flatString(raw, i)
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

// flatInt is an integer member's value; ok is false for anything else (a string, null, an integer a
// float64 does not hold exactly, which jsonInt reads through one).
func flatInt(value string, quoted bool) (jsonInt, bool) {
	if quoted {
		return 0, false
	}
	n, err := strconv.ParseInt(value, 10, 64)
	return jsonInt(n), err == nil && n >= -1<<53 && n <= 1<<53
}

// flatBool is a boolean member's value.
func flatBool(value string, quoted bool) (bool, bool) {
	return value == "true", !quoted && (value == "true" || value == "false")
}
