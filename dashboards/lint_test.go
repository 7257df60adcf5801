package dashboards_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// datasourceUID is the uid of the datasource provisioning/datasources/prometheus.yml declares.
const datasourceUID = "prometheus"

func TestDashboardsLint(t *testing.T) {
	boards := loadBoards(t)
	var titles []string
	uids := map[string]string{}
	for _, b := range boards {
		titles = append(titles, b.Title)
		if other, ok := uids[b.UID]; ok {
			t.Errorf("%s and %s share the uid %q", b.File, other, b.UID)
		}
		uids[b.UID] = b.File
	}
	assert.ElementsMatch(t, []string{"Sale overview", "API", "Redis scripts", "Write-behind"}, titles)

	for _, b := range boards {
		t.Run(b.File, func(t *testing.T) {
			ids := map[int]bool{}
			for _, p := range b.Panels {
				require.False(t, ids[p.ID], "panel id %d used twice", p.ID)
				ids[p.ID] = true
			}
			for _, p := range b.visualisations() {
				for _, problem := range lintPanel(b, p) {
					t.Errorf("panel %q: %s", p.Title, problem)
				}
			}
		})
	}
}

// lintPanel returns what is wrong with a panel: every panel says what it shows, in which unit, with
// thresholds that rise, on the provisioned Prometheus, with queries whose variables exist.
func lintPanel(b board, p panel) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if p.ID <= 0 {
		bad("no id")
	}
	if strings.TrimSpace(p.Description) == "" {
		bad("no description")
	}
	d := p.FieldConfig.Defaults
	if d.Unit == "" {
		bad("no unit")
	}
	switch th := d.Thresholds; {
	case th == nil || len(th.Steps) == 0:
		bad("no thresholds")
	case th.Mode != "absolute" && th.Mode != "percentage":
		bad("thresholds mode %q", th.Mode)
	default:
		if th.Steps[0].Value != nil {
			bad("the first threshold step must be the base (value null)")
		}
		for i, s := range th.Steps {
			if s.Color == "" {
				bad("threshold step %d has no colour", i)
			}
			if i >= 2 && (s.Value == nil || *s.Value <= *th.Steps[i-1].Value) {
				bad("threshold steps must rise")
			}
			if i == 1 && s.Value == nil {
				bad("threshold step %d has no value", i)
			}
		}
	}
	if p.Datasource.UID != datasourceUID {
		bad("datasource %q, want the provisioned %q", p.Datasource.UID, datasourceUID)
	}
	if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
		bad("grid position %+v", p.GridPos)
	}
	if len(p.Targets) == 0 {
		bad("no query")
	}
	refs := map[string]bool{}
	for _, q := range p.Targets {
		if q.RefID == "" || refs[q.RefID] {
			bad("query refId %q missing or used twice", q.RefID)
		}
		refs[q.RefID] = true
		if q.Datasource.UID != datasourceUID {
			bad("query %s: datasource %q", q.RefID, q.Datasource.UID)
		}
		if strings.TrimSpace(q.Expr) == "" {
			bad("query %s: no expression", q.RefID)
			continue
		}
		if _, unknown := b.expand(q.Expr); len(unknown) > 0 {
			bad("query %s: unknown variables %v", q.RefID, unknown)
		}
		if len(metricNames(q.Expr)) == 0 {
			bad("query %s reads no ticketrush, go, process or up metric", q.RefID)
		}
	}
	return problems
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{`sum(rate(ticketrush_http_requests_total{route=~"$route", status=~"5.."}[1m]))`, []string{"ticketrush_http_requests_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(ticketrush_x_seconds_bucket[1m])))`, []string{"ticketrush_x_seconds_bucket"}},
		{`sum(up{job="ticketrush"})`, []string{"up"}},
		{`go_goroutines{job="ticketrush_fake"} / process_open_fds`, []string{"go_goroutines", "process_open_fds"}},
		{`count by (version) (ticketrush_build_info) > 0 and up`, []string{"ticketrush_build_info"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, metricNames(tt.give), tt.give)
	}
}

func TestExpand(t *testing.T) {
	b := board{}
	b.Templating.List = []variable{{Name: "concert", IncludeAll: true, AllValue: ".*"}}
	got, unknown := b.expand(`rate(x{concert=~"$concert"}[$__rate_interval]) + y{c=~"${concert}"} + z[$__range] + w{a="$nope"}`)
	assert.Equal(t, `rate(x{concert=~".*"}[1m]) + y{c=~".*"} + z[5m] + w{a="$nope"}`, got)
	assert.Equal(t, []string{"nope"}, unknown)
}

func TestAlertRulesLint(t *testing.T) {
	rules := loadRules(t)
	require.NotEmpty(t, rules)

	// Every alert fires in at least one case of the promtool unit tests.
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, filepath.Join("prometheus", "alerts_test.yml"), &tests)
	fires := map[string]bool{}
	for _, g := range tests.Tests {
		for _, c := range g.AlertRuleTest {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname] = true
			}
		}
	}

	var raw struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, filepath.Join("prometheus", "alerts.yml"), &raw)
	for _, g := range raw.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			assert.Contains(t, []string{"warning", "critical"}, r.Labels["severity"], "%s: severity", r.Alert)
			assert.NotEmpty(t, r.Annotations["summary"], "%s: summary", r.Alert)
			assert.NotEmpty(t, r.Annotations["description"], "%s: description", r.Alert)
			assert.True(t, fires[r.Alert], "%s: alerts_test.yml has no case where it fires", r.Alert)
		}
	}
}

// TestProvisioningMatchesCompose checks that the files docker-compose.yml mounts fit together: Grafana
// finds the dashboards where the provider looks and the datasource they name; Prometheus reads the
// config and rules promcheck checks and scrapes the service compose runs.
func TestProvisioningMatchesCompose(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Command     any               `yaml:"command"`
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	readYAML(t, filepath.Join("..", "docker-compose.yml"), &compose)
	for _, s := range []string{"redis", "postgres", "ticketrush", "prometheus", "grafana"} {
		require.Contains(t, compose.Services, s, "docker-compose.yml runs %s", s)
	}
	mounts := func(service string) map[string]string {
		m := map[string]string{}
		for _, v := range compose.Services[service].Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && strings.HasPrefix(parts[0], "./") {
				m[filepath.Clean(parts[0])] = parts[1]
			}
		}
		return m
	}

	grafana := mounts("grafana")
	assert.Equal(t, "/etc/grafana/provisioning", grafana["dashboards/provisioning"])
	var provider struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join("provisioning", "dashboards", "ticketrush.yml"), &provider)
	require.Len(t, provider.Providers, 1)
	assert.Equal(t, provider.Providers[0].Options.Path, grafana["dashboards/json"], "the provider reads where compose mounts json/")

	var ds struct {
		Datasources []struct {
			UID      string `yaml:"uid"`
			Type     string `yaml:"type"`
			URL      string `yaml:"url"`
			JSONData struct {
				TimeInterval string `yaml:"timeInterval"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join("provisioning", "datasources", "prometheus.yml"), &ds)
	require.Len(t, ds.Datasources, 1)
	assert.Equal(t, datasourceUID, ds.Datasources[0].UID)
	assert.Equal(t, "prometheus", ds.Datasources[0].Type)
	assert.Equal(t, "http://prometheus:9090", ds.Datasources[0].URL)

	assert.Equal(t, "/etc/prometheus", mounts("prometheus")["dashboards/prometheus"])
	assert.Contains(t, fmt.Sprint(compose.Services["prometheus"].Command), "--config.file=/etc/prometheus/prometheus.yml")
	var prom struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
		ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
	}
	readYAML(t, filepath.Join("prometheus", "prometheus.yml"), &prom)
	assert.Equal(t, prom.Global.ScrapeInterval, ds.Datasources[0].JSONData.TimeInterval, "Grafana's timeInterval is the scrape interval")
	i := slices.IndexFunc(prom.ScrapeConfigs, func(c scrapeConfig) bool { return c.JobName == "ticketrush" })
	require.GreaterOrEqual(t, i, 0, "prometheus.yml scrapes the job ticketrush")
	assert.Equal(t, []string{"ticketrush:8080"}, prom.ScrapeConfigs[i].StaticConfigs[0].Targets)
	assert.Equal(t, ":8080", compose.Services["ticketrush"].Environment["HTTP_ADDR"])
}

type scrapeConfig struct {
	JobName       string `yaml:"job_name"`
	StaticConfigs []struct {
		Targets []string `yaml:"targets"`
	} `yaml:"static_configs"`
}
