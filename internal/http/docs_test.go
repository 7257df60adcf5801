package http

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
// error table has every problem code of openapi.yaml and no other.
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

	specCodes := doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum
	docCodes := map[string]bool{}
	for line := range strings.Lines(string(raw)) {
		if m := docErrorRow.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			docCodes[m[2]] = true
		}
	}
	require.NotEmpty(t, docCodes, "docs/api.md has no error table")
	var want []string
	for _, c := range specCodes {
		want = append(want, c.(string))
		assert.Contains(t, docCodes, c, "docs/api.md's error table lacks %s, which openapi.yaml has", c)
	}
	for c := range docCodes {
		assert.True(t, slices.Contains(want, c), "docs/api.md's error table has %s, which openapi.yaml does not", c)
	}
}
