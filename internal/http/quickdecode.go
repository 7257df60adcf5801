package http

import (
	"encoding/json"
	"reflect"
	"strconv"

	"github.com/ticketrush/ticketrush/internal/flatjson"
)

// The fast path of decode (decode.go): a body that plainly keeps the rules, read in one scan.

// quickDecode decodes the bodies that plainly keep the rules in one scan and one json.Unmarshal: every
// object one of v's structs, its keys exact field names given once and unescaped, no null anywhere,
// one value. It reports false, having decided nothing, for anything else, which decodeStrict then
// decodes or refuses with its reason; the two paths were half of a hold's handler time (BenchmarkHoldHandler).
// FuzzQuickDecode holds it to decodeStrict.
func quickDecode(body []byte, v any) bool {
	s := quickScan{b: body}
	s.space()
	if !s.value(reflect.TypeOf(v)) {
		return false
	}
	s.space()
	if s.i != len(s.b) {
		return false
	}
	if fb, ok := v.(flatBody); ok && flatjson.Fields(string(body), fb.decodeFlat) {
		return true
	}
	return json.Unmarshal(body, v) == nil
}

// flatBody is a request body that quickDecode, once its scan has passed, reads with flatjson instead
// of json.Unmarshal when it is written without spaces: a hold's and a payment's, a fan's hottest
// requests, whose json.Unmarshal was a quarter of a hold handler's CPU (BenchmarkHoldHandler).
// decodeFlat takes one member, reporting false for a value it does not take; json.Unmarshal then
// decodes the body, setting again each field the body names.
type flatBody interface {
	decodeFlat(key, value string, quoted bool) bool
}

func (h *holdRequest) decodeFlat(key, value string, quoted bool) bool {
	switch key {
	case "scheduleId":
		h.ScheduleID = value
	case "seatId":
		h.SeatID = value
	default:
		return false
	}
	return quoted
}

func (p *payRequest) decodeFlat(key, value string, quoted bool) bool {
	if key != "reservationId" {
		return false
	}
	p.ReservationID = value
	return quoted
}

// quickScan walks a JSON body for quickDecode: it checks the rules above and finds where values end;
// what it takes for a scalar (a string, a number, true or false) json.Unmarshal checks.
type quickScan struct {
	b []byte
	i int
}

func (s *quickScan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *quickScan) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *quickScan) value(t reflect.Type) bool {
	t, structured := target(t)
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '{':
		return structured && t.Kind() == reflect.Struct && s.object(jsonFields(t))
	case '[':
		return structured && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && s.array(t.Elem())
	case '"':
		_, ok := s.str(false)
		return ok
	case 'n':
		return false // null: decodeStrict knows where it is allowed
	default: // a number, true or false
		start := s.i
		for s.i < len(s.b) && (isAlnum(s.b[s.i]) || s.b[s.i] == '-' || s.b[s.i] == '+' || s.b[s.i] == '.') {
			s.i++
		}
		if c == '-' || c >= '0' && c <= '9' {
			// strictJSON reads every number as a float64 (Decoder.Token), so it refuses one past
			// float64's range even where the field would take it (json.RawMessage).
			_, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
			return err == nil
		}
		return s.i > start
	}
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (s *quickScan) object(fields map[string]reflect.Type) bool {
	s.i++ // {
	if s.next('}') {
		return true
	}
	var seenBuf [8][]byte
	seen := seenBuf[:0]
	for {
		s.space()
		key, ok := s.str(true)
		if !ok {
			return false
		}
		ft, known := fields[string(key)]
		if !known {
			return false
		}
		for _, k := range seen {
			if string(k) == string(key) {
				return false
			}
		}
		seen = append(seen, key)
		if !s.next(':') {
			return false
		}
		s.space()
		if !s.value(ft) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

func (s *quickScan) array(elem reflect.Type) bool {
	s.i++ // [
	if s.next(']') {
		return true
	}
	for {
		s.space()
		if !s.value(elem) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next(']')
	}
}

// str reads a string and returns its raw bytes; a key (plain) must have no escapes.
func (s *quickScan) str(plain bool) ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], true
		case c == '\\':
			if plain {
				return nil, false
			}
			i++ // the escaped byte; json.Unmarshal checks the escape
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}
