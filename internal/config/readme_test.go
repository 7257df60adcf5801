package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeRow is a row of README.md's configuration table: the variables it names and, for each, the
// default it states ("" for empty; required when it says required; unknown when it says something else).
type readmeRow struct {
	names    []string
	defaults []string // one a name, or nil when the column is not a plain list of them
	required bool
	line     int
}

var (
	backticked = regexp.MustCompile("`([^`]*)`")
	varName    = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	valueList  = regexp.MustCompile("^`[^`]*`(, `[^`]*`)*$")
)

// readmeSettings parses the table under README.md's "## Configuration (environment)": its first column
// names one or more variables (`A`, `B`); its second states their defaults: `x`, `y` (one each, an
// aside in parentheses or after a semicolon allowed), "empty", or "required ...".
func readmeSettings(t *testing.T) []readmeRow {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var rows []readmeRow
	in := false
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Configuration (environment)"
			continue
		case !in || !strings.HasPrefix(line, "|"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		require.GreaterOrEqual(t, len(cells), 3, "README.md:%d: a row of three cells", i+1)
		first, second := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
		if first == "variable" || strings.HasPrefix(first, "---") {
			continue
		}
		r := readmeRow{line: i + 1}
		for _, m := range backticked.FindAllStringSubmatch(first, -1) {
			require.Regexp(t, varName, m[1], "README.md:%d: a variable's name", i+1)
			r.names = append(r.names, m[1])
		}
		require.NotEmpty(t, r.names, "README.md:%d: the row names no variable", i+1)
		// The stated value, before any aside: "`20`, `40`", "`:8080` (make run: ...)", "empty".
		stated := second
		if j := strings.IndexAny(stated, "(;"); j >= 0 {
			stated = strings.TrimSpace(stated[:j])
		}
		switch {
		case strings.HasPrefix(stated, "required"):
			r.required = true
		case stated == "empty":
			r.defaults = make([]string, len(r.names))
		case valueList.MatchString(stated):
			var ds []string
			for _, m := range backticked.FindAllStringSubmatch(stated, -1) {
				ds = append(ds, m[1])
			}
			if len(ds) == len(r.names) {
				r.defaults = ds
			}
		}
		rows = append(rows, r)
	}
	require.NotEmpty(t, rows, "README.md has a configuration table")
	return rows
}

// readByLoad lists every variable Load asks for, in the order it asks, given env.
func readByLoad(env map[string]string) []string {
	var asked []string
	Load(func(k string) string {
		if !slices.Contains(asked, k) {
			asked = append(asked, k)
		}
		return env[k]
	})
	return asked
}

// TestREADMEDocumentsEverySetting holds README.md's configuration table to Load: every variable Load
// reads is a row, every row names a variable Load reads, and each default the table states is Load's
// (setting the variable to it loads the same Config as leaving it unset); a variable the table calls
// required stops the start when unset.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	rows := readmeSettings(t)
	var documented []string
	for _, r := range rows {
		for _, n := range r.names {
			assert.NotContains(t, documented, n, "README.md:%d: %s is in two rows", r.line, n)
			documented = append(documented, n)
		}
	}
	read := readByLoad(valid())
	// A variable Load reads only when another is set is found with every one set.
	all := valid()
	for _, n := range append(slices.Clone(read), documented...) {
		if all[n] == "" {
			all[n] = "x"
		}
	}
	for _, n := range readByLoad(all) {
		if !slices.Contains(read, n) {
			read = append(read, n)
		}
	}
	for _, n := range read {
		assert.Contains(t, documented, n, "Load reads %s: README.md's configuration table has no row for it", n)
	}
	for _, n := range documented {
		assert.Contains(t, read, n, "README.md's configuration table documents %s: Load does not read it", n)
	}

	base, err := Load(env(valid()))
	require.NoError(t, err)
	for _, r := range rows {
		for i, n := range r.names {
			switch {
			case r.required:
				give := valid()
				delete(give, n)
				_, err := Load(env(give))
				if assert.Error(t, err, "README.md:%d: %s is required", r.line, n) {
					assert.Contains(t, err.Error(), n+": required", "README.md:%d", r.line)
				}
			case r.defaults != nil:
				give := valid()
				give[n] = r.defaults[i]
				c, err := Load(env(give))
				if assert.NoError(t, err, "README.md:%d: %s=%q, its stated default", r.line, n, r.defaults[i]) {
					assert.Equal(t, base, c, "README.md:%d: %s's stated default %q is not Load's", r.line, n, r.defaults[i])
				}
			default:
				t.Errorf("README.md:%d: %s's default is not checked: state it as `value` (one a variable, an aside after it in parentheses or after a semicolon), empty, or required", r.line, n)
			}
		}
	}
}
