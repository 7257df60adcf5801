package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// maxBody is the largest request body accepted.
const maxBody = 64 << 10

// decode reads a JSON body into v: at most 64 KiB, unknown fields refused, one value only.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, v)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return errPayloadTooLarge
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errSlowBody
		}
		return ticketrush.Invalidf("the body must hold one JSON value")
	}
	return nil
}

func decodeError(err error, v any) error {
	var (
		tooLarge  *http.MaxBytesError
		syntax    *json.SyntaxError
		unmarshal *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return errPayloadTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errSlowBody // the server's read timeout passed before the body arrived
	case errors.Is(err, io.EOF):
		return ticketrush.Invalidf("the body is empty; a JSON object is required")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return ticketrush.Invalidf("the body is not valid JSON")
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
