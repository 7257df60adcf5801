package http

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"strconv"
)

// docsPath is the project's API reference, written for people.
const docsPath = "../../docs/api.md"

var (
	// docEndpoint is an endpoint as docs/api.md writes it: `METHOD /path`, maybe with a query.
	docEndpoint = regexp.MustCompile("`(GET|POST|PUT|PATCH|DELETE) (/[^`?\\s]*)[^`]*`")
	// docErrorRow is a row of docs/api.md's error table: | status | `CODE` | when |.
	docErrorRow = regexp.MustCompile("^\\| (\\d{3}) \\| `([A-Z_]+)` \\|")
)

// TestDocsMatchOpenAPI: docs/api.md names every operation openapi.yaml describes and no other, and its
// error table has every code of the service's error table (ticketrush.Codes), under the same status, and
// no other.
func TestDocsMatchOpenAPI(t *testing.T) {
	raw, err := os.ReadFile(docsPath)
	require.NoError(t, err)
	doc, _ := loadSpec(t)

	spec := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			spec[operationKey(method, path)] = true
		}
	}
	documented := map[string]bool{}
	for _, m := range docEndpoint.FindAllStringSubmatch(string(raw), -1) {
		documented[operationKey(m[1], m[2])] = true
	}
	for op := range spec {
		assert.True(t, documented[op], "docs/api.md does not describe %s, which openapi.yaml has", op)
	}
	for op := range documented {
		assert.True(t, spec[op], "docs/api.md describes %s, which openapi.yaml does not have", op)
	}

	docCodes := map[string]string{} // code -> status
	for line := range strings.Lines(string(raw)) {
		if m := docErrorRow.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			docCodes[m[2]] = m[1]
		}
	}
	require.NotEmpty(t, docCodes, "docs/api.md has no error table")
	for _, c := range ticketrush.Codes() {
		status, ok := docCodes[string(c.Code)]
		if assert.True(t, ok, "docs/api.md's error table lacks %s, which the error table has", c.Code) {
			assert.Equal(t, strconv.Itoa(c.Status), status, "docs/api.md lists %s under %s; the error table says %d", c.Code, status, c.Status)
		}
	}
	for c := range docCodes {
		_, ok := ticketrush.LookupCode(ticketrush.Code(c))
		assert.True(t, ok, "docs/api.md's error table has %s, which the error table does not", c)
	}
}
