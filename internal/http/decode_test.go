package http

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestDecodeIsExact: what "reject unknown fields" means, exactly: field names match case-sensitively, a
// field given twice and a null list element are refused (a null field is absent), a body declared as
// anything but JSON is 415.
func TestDecodeIsExact(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		give        string
		wantCode    ticketrush.Code // "" when the body is taken
		wantDetail  string
	}{
		{name: "exact", give: `{"amount":1}`},
		{name: "no content type", contentType: "-", give: `{"amount":1}`},
		{name: "json with charset", contentType: "application/json; charset=utf-8", give: `{"amount":1}`},
		{name: "a +json type", contentType: "application/merge-patch+json", give: `{"amount":1}`},
		{name: "upper-case name", give: `{"AMOUNT":1}`, wantCode: "INVALID_REQUEST", wantDetail: `did you mean "amount"`},
		{name: "mixed-case nested name", give: `{"amount":1,"sections":[{"Name":"A"}]}`, wantCode: "INVALID_REQUEST",
			wantDetail: `"sections[0].Name"`},
		{name: "duplicate key", give: `{"amount":1,"amount":2}`, wantCode: "INVALID_REQUEST", wantDetail: `"amount" is given twice`},
		{name: "duplicate nested key", give: `{"sections":[{"name":"A","name":"B"}]}`, wantCode: "INVALID_REQUEST",
			wantDetail: `"sections[0].name" is given twice`},
		{name: "null in a list", give: `{"schedules":[null]}`, wantCode: "INVALID_REQUEST", wantDetail: `"schedules[0]" must not be null`},
		{name: "null field is absent", give: `{"amount":1,"sections":null}`},
		{name: "null in a nested list", give: `{"amount":1,"sections":[{"name":"A"},null]}`, wantCode: "INVALID_REQUEST",
			wantDetail: `"sections[1]" must not be null`},
		{name: "null body", give: `null`, wantCode: "INVALID_REQUEST", wantDetail: "the body is null"},
		{name: "empty body", give: ` `, wantCode: "INVALID_REQUEST", wantDetail: "the body is empty"},
		{name: "cut short", give: `{"amount":143000`, wantCode: "INVALID_REQUEST", wantDetail: "ends before its JSON value does"},
		{name: "cut short in a key", give: `{"amo`, wantCode: "INVALID_REQUEST", wantDetail: "ends before its JSON value does"},
		{name: "syntax error", give: `{"amount":1,}`, wantCode: "INVALID_REQUEST", wantDetail: "not valid JSON: invalid character '}'"},
		{name: "an array body", give: `[]`, wantCode: "INVALID_REQUEST", wantDetail: "the body must be a JSON object, not a JSON array"},
		{name: "a number body", give: `12`, wantCode: "INVALID_REQUEST", wantDetail: "the body must be a JSON object, not a JSON number"},
		{name: "unknown field", give: `{"amount":1,"seat":"A-1"}`, wantCode: "INVALID_REQUEST", wantDetail: "amount, schedules, sections {name}"},
		{name: "form", contentType: "application/x-www-form-urlencoded", give: `{"amount":1}`, wantCode: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "text", contentType: "text/plain", give: `{"amount":1}`, wantCode: "UNSUPPORTED_MEDIA_TYPE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.give))
			switch tt.contentType {
			case "":
				r.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				r.Header.Set("Content-Type", tt.contentType)
			}
			var v struct {
				Amount    int64       `json:"amount"`
				Schedules []time.Time `json:"schedules"`
				Sections  []struct {
					Name string `json:"name"`
				} `json:"sections"`
			}
			err := decode(httptest.NewRecorder(), r, &v)
			if tt.wantCode == "" {
				require.NoError(t, err)
				assert.Equal(t, int64(1), v.Amount)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.wantCode, ticketrush.ErrorCode(err))
			assert.Contains(t, ticketrush.ErrorDetail(err), tt.wantDetail)
			assert.NotEqual(t, http.StatusInternalServerError, ticketrush.ErrorInfo(err).Status)
		})
	}
}
