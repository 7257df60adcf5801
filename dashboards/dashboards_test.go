package dashboards_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// board is the part of a Grafana dashboard the tests read.
type board struct {
	File       string
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name       string `json:"name"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
	Query      any    `json:"query"`
}

type panel struct {
	ID          int        `json:"id"`
	Type        string     `json:"type"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Datasource  datasource `json:"datasource"`
	GridPos     struct {
		H, W, X, Y int
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit       string `json:"unit"`
			Thresholds *struct {
				Mode  string `json:"mode"`
				Steps []struct {
					Value *float64 `json:"value"`
					Color string   `json:"color"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []target `json:"targets"`
	Panels  []panel  `json:"panels"` // a collapsed row's panels
}

type target struct {
	RefID      string     `json:"refId"`
	Expr       string     `json:"expr"`
	Datasource datasource `json:"datasource"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// loadBoards reads every dashboard under json/.
func loadBoards(t *testing.T) []board {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("json", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no dashboards under json/: run make dashboards")
	var boards []board
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var b board
		require.NoError(t, json.Unmarshal(raw, &b), f)
		b.File = filepath.Base(f)
		boards = append(boards, b)
	}
	return boards
}

// visualisations returns the dashboard's panels that show data, rows left out (and a collapsed row's
// panels put in).
func (b board) visualisations() []panel {
	var out []panel
	for _, p := range b.Panels {
		if p.Type == "row" {
			out = append(out, p.Panels...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// grafanaGlobals are the built-in variables the dashboards use, with the value the query check gives
// them: a rate window long enough for a few 1 s scrapes, and a short range.
var grafanaGlobals = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "5s",
	"__range":         "5m",
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]`)

// expand replaces the Grafana variables in expr as the "All" selection would: a dashboard variable by
// its allValue, a built-in by grafanaGlobals. It returns the names it does not know.
func (b board) expand(expr string) (string, []string) {
	values := map[string]string{}
	for k, v := range grafanaGlobals {
		values[k] = v
	}
	for _, v := range b.Templating.List {
		values[v.Name] = v.AllValue
	}
	var unknown []string
	out := varRef.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if v, ok := values[name]; ok {
			return v
		}
		unknown = append(unknown, name)
		return m
	})
	return out, unknown
}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	metricName = regexp.MustCompile(`\b(?:(?:ticketrush|go|process)_[A-Za-z0-9_:]+|up)\b\s*[{\[)]?`)
)

// metricNames returns the metric names expr reads: ticketrush_*, go_*, process_* and up.
func metricNames(expr string) []string {
	seen := map[string]bool{}
	for _, m := range metricName.FindAllString(quoted.ReplaceAllString(expr, `""`), -1) {
		name := strings.TrimRight(m, " \t\n{[)")
		if name == "up" && !strings.ContainsAny(m[len(name):], "{[") {
			continue // the word "up", not the metric
		}
		seen[name] = true
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// rule is one alerting or recording rule of a rule file.
type rule struct {
	Group  string
	Alert  string `yaml:"alert"`
	Record string `yaml:"record"`
	Expr   string `yaml:"expr"`
}

func (r rule) name() string { return r.Alert + r.Record }

// loadRules reads the rule files prometheus/prometheus.yml names.
func loadRules(t *testing.T) []rule {
	t.Helper()
	var cfg struct {
		RuleFiles []string `yaml:"rule_files"`
	}
	readYAML(t, filepath.Join("prometheus", "prometheus.yml"), &cfg)
	require.NotEmpty(t, cfg.RuleFiles, "prometheus.yml names no rule files")
	var rules []rule
	for _, f := range cfg.RuleFiles {
		var file struct {
			Groups []struct {
				Name  string `yaml:"name"`
				Rules []rule `yaml:"rules"`
			} `yaml:"groups"`
		}
		readYAML(t, filepath.Join("prometheus", f), &file)
		for _, g := range file.Groups {
			for _, r := range g.Rules {
				r.Group = g.Name
				rules = append(rules, r)
			}
		}
	}
	return rules
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, v), path)
}
