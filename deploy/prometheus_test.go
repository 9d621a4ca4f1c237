package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	rulesFile     = "prometheus/shardkeeper-rules.yml"
	rulesTestFile = "prometheus/shardkeeper-rules_test.yml"
	dashboardFile = "grafana/shardkeeper.json"
)

// TestPromtoolRules runs `promtool check rules` on the rules and `promtool
// test rules` on their unit tests, in which every alert fires in one case
// and stays silent in another.
func TestPromtoolRules(t *testing.T) {
	promtool := tool(t, "promtool", "prometheus")
	for _, args := range [][]string{{"check", "rules", filepath.Base(rulesFile)}, {"test", "rules", filepath.Base(rulesTestFile)}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(rulesFile)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// ruleGroups mirrors the rule file's schema strictly (unknown fields fail).
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var g ruleGroups
	if err := yaml.UnmarshalStrict(b, &g); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var all []rule
	for _, grp := range g.Groups {
		all = append(all, grp.Rules...)
	}
	return all
}

// rulesTest mirrors the parts of promtool's unit test file the checks read.
type rulesTest struct {
	Tests []struct {
		Name          string                    `json:"name"`
		InputSeries   []struct{ Series string } `json:"input_series"`
		AlertRuleTest []struct {
			Alertname string            `json:"alertname"`
			ExpAlerts []json.RawMessage `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func loadRulesTest(t *testing.T) rulesTest {
	t.Helper()
	b, err := os.ReadFile(rulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	var rt rulesTest
	if err := yaml.Unmarshal(b, &rt); err != nil {
		t.Fatalf("%s: %v", rulesTestFile, err)
	}
	return rt
}

// TestEveryAlertFiresAndStaysSilent checks the unit tests cover each alert
// of the rules with at least one case where it fires and one where it does
// not, and that each alert has a severity, a summary, a description and a
// runbook section in docs/operations.md.
func TestEveryAlertFiresAndStaysSilent(t *testing.T) {
	fires, silent := map[string]int{}, map[string]int{}
	for _, tc := range loadRulesTest(t).Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname]++
			} else {
				silent[a.Alertname]++
			}
		}
	}
	runbook, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		alerts++
		if fires[r.Alert] == 0 || silent[r.Alert] == 0 {
			t.Errorf("alert %s: %d firing and %d silent cases in %s; want at least one of each", r.Alert, fires[r.Alert], silent[r.Alert], rulesTestFile)
		}
		if r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical" {
			t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, r.Labels["severity"])
		}
		anchor := "docs/operations.md#" + strings.ToLower(r.Alert)
		if r.Annotations["summary"] == "" || !strings.Contains(r.Annotations["description"], anchor) {
			t.Errorf("alert %s: want a summary and a description that points to %s", r.Alert, anchor)
		}
		if !strings.Contains(string(runbook), "### "+r.Alert+"\n") {
			t.Errorf("alert %s: docs/operations.md has no section \"### %s\"", r.Alert, r.Alert)
		}
	}
	if alerts < 10 {
		t.Fatalf("%d alerts in %s, want the 10 the runbook describes", alerts, rulesFile)
	}
}

// dashboard mirrors the parts of the Grafana dashboard the checks read.
type dashboard struct {
	UID        string `json:"uid"`
	Panels     []panel
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// dashboardVars are values for the dashboard's variables, so that its
// queries can be checked as PromQL.
var dashboardVars = strings.NewReplacer("$__rate_interval", "1m", "$__range", "1h", "$job", ".+")

// TestDashboard checks the Grafana dashboard: unique panel ids, every
// query panel on the ${datasource} variable, and every query valid PromQL
// (promtool checks them as recording rules, the dashboard's variables
// replaced by values).
func TestDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" {
		t.Error("dashboard without a uid")
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	if !vars["datasource"] || !vars["job"] {
		t.Errorf("dashboard variables %v, want datasource and job", vars)
	}
	ids := map[int]string{}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	queries := 0
	for _, p := range d.Panels {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", p.Title, other, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: want queries on the ${datasource} variable", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			expr, _ := json.Marshal(dashboardVars.Replace(q.Expr))
			fmt.Fprintf(&rules, "      - record: dashboard:q%d\n        expr: %s\n", queries, expr)
		}
	}
	promtool := tool(t, "promtool", "prometheus")
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("the dashboard's queries as PromQL: %v\n%s\n%s", err, out, rules.String())
	}
}

// identifier matches PromQL identifiers: metric names, recording rule
// names (with colons), label names and functions.
var identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// stringLiteral matches PromQL's quoted strings (label values).
var stringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)

// usedNames returns the metric names expr reads from a node (shardkeeper_*)
// and the recording rules it reads (names with a colon), each sorted.
func usedNames(expr string) (metrics, recorded []string) {
	for _, id := range identifier.FindAllString(stringLiteral.ReplaceAllString(expr, `""`), -1) {
		switch {
		case strings.Contains(id, ":"):
			recorded = append(recorded, id)
		case strings.HasPrefix(id, "shardkeeper_"):
			metrics = append(metrics, id)
		}
	}
	sort.Strings(metrics)
	sort.Strings(recorded)
	return metrics, recorded
}

// referencedMetrics returns every node metric name the rules, their unit
// tests' input series and the dashboard use, with where each is used, and
// fails the test on a recording rule name that the rules do not define.
func referencedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	defined := map[string]bool{}
	rules := loadRules(t)
	for _, r := range rules {
		if r.Record != "" {
			defined[r.Record] = true
		}
	}
	add := func(where, expr string) {
		metrics, recorded := usedNames(expr)
		for _, m := range metrics {
			used[m] = append(used[m], where)
		}
		for _, r := range recorded {
			if !defined[r] {
				t.Errorf("%s reads %s, which no rule in %s records", where, r, rulesFile)
			}
		}
	}
	for _, r := range rules {
		add(rulesFile+" "+r.Record+r.Alert, r.Expr)
	}
	for _, tc := range loadRulesTest(t).Tests {
		for _, s := range tc.InputSeries {
			if !strings.Contains(s.Series, ":") {
				add(rulesTestFile+" "+tc.Name, s.Series)
			}
		}
	}
	for _, p := range loadDashboard(t).Panels {
		for _, q := range p.Targets {
			add(dashboardFile+" "+p.Title, q.Expr)
		}
	}
	return used
}

func TestUsedNames(t *testing.T) {
	m, r := usedNames(`histogram_quantile(0.99, sum by (job, le) (rate(shardkeeper_a_bucket{job=~"shardkeeper_x"}[5m]))) / job:shardkeeper_b:rate5m - time()`)
	if strings.Join(m, ",") != "shardkeeper_a_bucket" || strings.Join(r, ",") != "job:shardkeeper_b:rate5m" {
		t.Fatalf("usedNames = %v, %v", m, r)
	}
}
