package http

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// maxBody is the largest request body accepted.
const maxBody = 64 << 10

// decode reads a JSON body into v: at most 64 KiB, one value only, and exact: a declared Content-Type
// must be JSON (415 otherwise; none is taken as JSON), field names match the request's exactly (Go's
// decoder alone would take "AMOUNT" for "amount"), a field given twice and a null in a list are refused
// (Go would store ["2026-...", null] as a time of year 1), and so is an unknown field, with the names
// the request takes. A field whose value is null is taken as absent, as JSON clients send it.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if err := jsonContent(r); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return decodeError(err, v)
	}
	if quickDecode(body, v) {
		return nil
	}
	return decodeStrict(body, v)
}

// decodeStrict is decode's reference path: it walks the body against v's type (strictJSON), then
// decodes it, and says what is wrong with a body it refuses.
func decodeStrict(body []byte, v any) error {
	if err := strictJSON(json.NewDecoder(bytes.NewReader(body)), reflect.TypeOf(v), ""); err != nil {
		if errors.Is(err, io.EOF) && len(bytes.TrimSpace(body)) > 0 {
			err = io.ErrUnexpectedEOF // the body began a value it does not finish: not an empty body
		}
		return decodeError(err, v)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, v)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return ticketrush.Invalidf("the body must hold one JSON value")
	}
	return nil
}

// optionalBody decodes r's body into v as decode does when there is one, and reports whether there was:
// an empty body, chunked or not, is none.
func optionalBody(w http.ResponseWriter, r *http.Request, v any) (bool, error) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return false, nil
	}
	if r.ContentLength < 0 { // chunked: empty is no body too
		br := bufio.NewReader(r.Body)
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			return false, nil
		}
		r.Body = io.NopCloser(br)
	}
	return true, decode(w, r, v)
}

// noBody holds the body of a call that takes none to the conventions of every body (docs/api.md: bodies
// reject unknown fields and anything over 64 KiB): none, or an empty JSON object.
func noBody(w http.ResponseWriter, r *http.Request) error {
	_, err := optionalBody(w, r, &struct{}{})
	return err
}

// jsonContent refuses a body declared as anything but JSON (application/json, or a +json type).
func jsonContent(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" || ct == "application/json" { // what clients send, without parsing it
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return ticketrush.WithDetail(errMediaType, fmt.Sprintf("the body is declared as %q; send JSON with Content-Type: application/json", ct))
}

// fieldError is a body whose shape breaks the exact rules strictJSON holds it to.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// target is the type a JSON value of Go type t decodes into (pointers followed) and whether its objects
// and arrays are walked against that type: not when t is unknown (nil) or decodes itself (time.Time).
func target(t reflect.Type) (reflect.Type, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t, t != nil && !reflect.PointerTo(t).Implements(unmarshalerType)
}

// strictJSON walks the next JSON value of dec against the Go type t it will be decoded into: object keys
// must name t's fields exactly and once each, and neither the body nor a list element may be null. Values whose type decodes itself
// (time.Time) and scalars are left to the decoder; so are type mismatches. path names the value in
// errors ("sections[0].name").
func strictJSON(dec *json.Decoder, t reflect.Type, path string) error {
	return strictValue(dec, t, path, false)
}

func strictValue(dec *json.Decoder, t reflect.Type, path string, element bool) error {
	t, structured := target(t)
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		if path == "" {
			return &fieldError{"the body is null; a JSON object is required"}
		}
		if element {
			return &fieldError{fmt.Sprintf("%q must not be null", path)}
		}
		return nil // a field given as null is absent
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if structured && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := strictValue(dec, elem, fmt.Sprintf("%s[%d]", path, i), true); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		if structured && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		var seen []string // an object of a request has a handful of fields
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			name := key
			if path != "" {
				name = path + "." + key
			}
			if slices.Contains(seen, key) {
				return &fieldError{fmt.Sprintf("field %q is given twice", name)}
			}
			seen = append(seen, key)
			ft, known := fields[key]
			if !known && len(fields) > 0 {
				for want := range fields {
					if strings.EqualFold(want, key) {
						return &fieldError{fmt.Sprintf("unknown field %q: field names are case-sensitive; did you mean %q?", name, want)}
					}
				}
				// any other unknown field: the decoder refuses it with the names the request takes
			}
			if err := strictValue(dec, ft, name, false); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// fieldsOf caches jsonFields by type: the request types are few, and walking a struct's tags on every
// request was a sizeable part of decoding a hold (BenchmarkHoldHandler).
var fieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON names of struct type t's fields to their types. The map is shared: read only.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsOf.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name != "-" && name != "" {
			fields[name] = f.Type
		}
	}
	fieldsOf.Store(t, fields)
	return fields
}

func decodeError(err error, v any) error {
	var (
		tooLarge  *http.MaxBytesError
		syntax    *json.SyntaxError
		unmarshal *json.UnmarshalTypeError
	)
	var field *fieldError
	switch {
	case errors.As(err, &field):
		return ticketrush.Invalidf("%s", field.msg)
	case errors.As(err, &tooLarge):
		return errPayloadTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errSlowBody // the server's read timeout passed before the body arrived
	case errors.Is(err, io.EOF):
		return ticketrush.Invalidf("the body is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return ticketrush.Invalidf("the body is not valid JSON: it ends before its JSON value does (cut short?)")
	case errors.As(err, &syntax):
		return ticketrush.Invalidf("the body is not valid JSON: %s at byte %d", strings.TrimPrefix(syntax.Error(), "json: "), syntax.Offset)
	case errors.As(err, &unmarshal) && unmarshal.Field == "":
		return ticketrush.Invalidf("the body must be a JSON object, not a JSON %s", unmarshal.Value)
	case errors.As(err, &unmarshal):
		return ticketrush.Invalidf("field %q must be %s", unmarshal.Field, jsonKind(unmarshal.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return ticketrush.Invalidf("unknown field %s; the fields of this request are %s",
			strings.TrimPrefix(err.Error(), "json: unknown field "), fieldNames(reflect.TypeOf(v)))
	default:
		var perr *time.ParseError
		if errors.As(err, &perr) {
			return ticketrush.Invalidf("times must be RFC 3339, e.g. 2026-12-24T10:00:00Z")
		}
		return ticketrush.Invalidf("the body does not match the request schema: %s", fmt.Sprint(err))
	}
}

// fieldNames lists the JSON fields of a request type, with the fields of nested objects in braces:
// "scheduleId, seatId", "title, venue, schedules, sections {name, price, seats}, queue {...}".
func fieldNames(t reflect.Type) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "none"
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		inner := f.Type
		for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice {
			inner = inner.Elem()
		}
		if inner.Kind() == reflect.Struct && inner != reflect.TypeOf(time.Time{}) {
			name += " {" + fieldNames(inner) + "}"
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

func jsonKind(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint64":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "of another type"
}
