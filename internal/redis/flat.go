package redis

import (
	"encoding/json"

	"github.com/ticketrush/ticketrush/internal/flatjson"
)

// The records the scripts return (a reservation, a debit, an idempotency record) are flat JSON objects
// of plain strings and integers, written without spaces. A payment decodes five of them; with
// encoding/json that was 9% of the service's CPU in make bench's payments. Each record's scan reads it
// with flatjson.Fields and hands anything else (an escape, a float, a space, a key it does not know)
// back to encoding/json: a record decodes to the same value either way (FuzzFlatRecordsDecodeAsJSON).

// decodeRecord reads raw, a record of type T, by scan or, when that cannot read it, by encoding/json.
func decodeRecord[T any](raw string, scan func(string) (T, bool)) (T, error) {
	if rec, ok := scan(raw); ok {
		return rec, nil
	}
	var rec T
	err := json.Unmarshal([]byte(raw), &rec)
	return rec, err
}

// flatInt is an integer member's value as a jsonInt (flatjson.Int).
func flatInt(value string, quoted bool) (jsonInt, bool) {
	n, ok := flatjson.Int(value, quoted)
	return jsonInt(n), ok
}
