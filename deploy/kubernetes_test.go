package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/keyserver"
	"github.com/shardkeeper/shardkeeper/internal/mysqlfront"
	"github.com/shardkeeper/shardkeeper/internal/statistics"
)

const kubernetesDir = "kubernetes"

// kustomization mirrors the fields of kustomize's Kustomization that
// kustomization.yaml uses (unknown fields fail).
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// manifests are the decoded objects of deploy/kubernetes.
type manifests struct {
	files          []string // the manifest files (kustomization.yaml aside)
	kustomization  kustomization
	statefulSet    *appsv1.StatefulSet
	services       []*corev1.Service
	secret         *corev1.Secret // secret.example.yaml
	pdb            *policyv1.PodDisruptionBudget
	serviceMonitor *monitoringv1.ServiceMonitor
	networkPolicy  *networkingv1.NetworkPolicy
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// loadManifests decodes every document of every YAML file in
// deploy/kubernetes strictly into its Kubernetes API type: an unknown or
// misspelt field, a wrong type or an unexpected kind fails the test.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	var m manifests
	paths, err := filepath.Glob(filepath.Join(kubernetesDir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests in %s: %v", kubernetesDir, err)
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(path) == "kustomization.yaml" {
			if err := yaml.UnmarshalStrict(b, &m.kustomization); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			continue
		}
		m.files = append(m.files, filepath.Base(path))
		for i, doc := range docSeparator.Split(string(b), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			where := fmt.Sprintf("%s document %d", path, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 StatefulSet":
				m.statefulSet = new(appsv1.StatefulSet)
				obj = m.statefulSet
			case "v1 Service":
				s := new(corev1.Service)
				m.services = append(m.services, s)
				obj = s
			case "v1 Secret":
				m.secret = new(corev1.Secret)
				obj = m.secret
			case "policy/v1 PodDisruptionBudget":
				m.pdb = new(policyv1.PodDisruptionBudget)
				obj = m.pdb
			case "networking.k8s.io/v1 NetworkPolicy":
				m.networkPolicy = new(networkingv1.NetworkPolicy)
				obj = m.networkPolicy
			case "monitoring.coreos.com/v1 ServiceMonitor":
				m.serviceMonitor = new(monitoringv1.ServiceMonitor)
				obj = m.serviceMonitor
			default:
				t.Fatalf("%s: unexpected kind %q of %q", where, tm.Kind, tm.APIVersion)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s (%s): %v", where, tm.Kind, err)
			}
		}
	}
	if m.statefulSet == nil || m.secret == nil || m.pdb == nil || m.serviceMonitor == nil || m.networkPolicy == nil || len(m.services) == 0 {
		t.Fatalf("want a StatefulSet, Services, a Secret, a PodDisruptionBudget, a NetworkPolicy and a ServiceMonitor in %s", kubernetesDir)
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestStrictDecodeRejectsUnknownFields shows the decoding of
// loadManifests fails on a field the API type does not have.
func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	var s appsv1.StatefulSet
	doc := "apiVersion: apps/v1\nkind: StatefulSet\nspec:\n  template:\n    spec:\n      terminationGracePeriod: 30\n"
	if err := yaml.UnmarshalStrict([]byte(doc), &s); err == nil || !strings.Contains(err.Error(), "terminationGracePeriod") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

// TestKubernetesManifests checks the invariants a deployment relies on.
func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t)
	sts := m.statefulSet
	pod := sts.Spec.Template
	podLabels := labels.Set(pod.Labels)

	t.Run("kustomization lists every manifest but the example Secret", func(t *testing.T) {
		want := slices.DeleteFunc(slices.Clone(m.files), func(f string) bool { return f == "secret.example.yaml" })
		got := slices.Sorted(slices.Values(m.kustomization.Resources))
		if m.kustomization.Kind != "Kustomization" || !slices.Equal(got, want) {
			t.Fatalf("kustomization %s resources %v, want %v", m.kustomization.Kind, got, want)
		}
	})

	t.Run("selectors match the pod template", func(t *testing.T) {
		sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(podLabels) {
			t.Fatalf("StatefulSet selector %v does not match its pods' labels %v (%v)", sts.Spec.Selector, pod.Labels, err)
		}
		pdbSel, err := metav1.LabelSelectorAsSelector(m.pdb.Spec.Selector)
		if err != nil || pdbSel.Empty() || !pdbSel.Matches(podLabels) {
			t.Fatalf("PodDisruptionBudget selector %v does not match the pods' labels %v (%v)", m.pdb.Spec.Selector, pod.Labels, err)
		}
		for _, s := range m.services {
			if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
				t.Errorf("Service %s selector %v does not match the pods", s.Name, s.Spec.Selector)
			}
		}
	})

	t.Run("the pod name is the instance id", func(t *testing.T) {
		c := container(t, sts)
		if v := envVar(c, "POD_NAME"); v == nil || v.ValueFrom == nil || v.ValueFrom.FieldRef == nil || v.ValueFrom.FieldRef.FieldPath != "metadata.name" {
			t.Fatalf("env POD_NAME = %+v, want the downward API's metadata.name", v)
		}
		if ids := flagValues(c.Args, "--instance-id"); !slices.Equal(ids, []string{"$(POD_NAME)"}) {
			t.Fatalf("--instance-id %v, want exactly $(POD_NAME)", ids)
		}
		if c.Args[0] != "serve" {
			t.Fatalf("args %v, want serve first", c.Args)
		}
	})

	t.Run("a headless Service governs the StatefulSet", func(t *testing.T) {
		s := service(m, sts.Spec.ServiceName)
		if s == nil || s.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Fatalf("serviceName %q: want a headless Service (clusterIP: None) of that name", sts.Spec.ServiceName)
		}
		if !s.Spec.PublishNotReadyAddresses {
			t.Fatal("the headless Service hides pods that are not ready: Prometheus would not scrape a node that cannot issue keys")
		}
	})

	t.Run("probes", func(t *testing.T) {
		c := container(t, sts)
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{{"liveness", c.LivenessProbe, "/livez"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/livez"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path {
				t.Errorf("%s probe %+v, want GET %s", p.name, p.probe, p.path)
				continue
			}
			if port := containerPort(c, p.probe.HTTPGet.Port.String()); port == nil || port.ContainerPort != 8080 {
				t.Errorf("%s probe port %s is not the HTTP port", p.name, p.probe.HTTPGet.Port.String())
			}
		}
		// The start may wait out a worker id's unknown floor: 1 minute of
		// the longest reservation plus 5 s of clock skew.
		if s := c.StartupProbe; s != nil && time.Duration(s.PeriodSeconds*s.FailureThreshold)*time.Second < 65*time.Second+30*time.Second {
			t.Errorf("the startup probe gives up after %d s: shorter than a start that waits out an unknown floor (65 s) plus 30 s", s.PeriodSeconds*s.FailureThreshold)
		}
	})

	t.Run("the grace period covers a graceful leave", func(t *testing.T) {
		grace := pod.Spec.TerminationGracePeriodSeconds
		if grace == nil || time.Duration(*grace)*time.Second <= daemon.MaxCloseTime {
			t.Fatalf("terminationGracePeriodSeconds %v: want more than daemon.MaxCloseTime (%v)", grace, daemon.MaxCloseTime)
		}
	})

	t.Run("PodDisruptionBudget", func(t *testing.T) {
		mu := m.pdb.Spec.MaxUnavailable
		if mu == nil || mu.IntValue() != 1 || m.pdb.Spec.MinAvailable != nil {
			t.Fatalf("maxUnavailable %v, minAvailable %v: want maxUnavailable 1", mu, m.pdb.Spec.MinAvailable)
		}
		if sts.Spec.Replicas == nil || *sts.Spec.Replicas < 2 {
			t.Fatalf("replicas %v: a budget of one unavailable pod needs at least 2", sts.Spec.Replicas)
		}
	})

	t.Run("Service ports are container ports", func(t *testing.T) {
		c := container(t, sts)
		for _, s := range m.services {
			for _, sp := range s.Spec.Ports {
				cp := containerPort(c, sp.TargetPort.String())
				if cp == nil || cp.Protocol != sp.Protocol {
					t.Errorf("Service %s port %s: target %s is not a %s container port", s.Name, sp.Name, sp.TargetPort.String(), sp.Protocol)
				}
			}
		}
	})

	t.Run("ServiceMonitor scrapes the headless Service with the token", func(t *testing.T) {
		sm := m.serviceMonitor
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		var matched []*corev1.Service
		for _, s := range m.services {
			if sel.Matches(labels.Set(s.Labels)) {
				matched = append(matched, s)
			}
		}
		// The job label is the Service's name; the rules' up{job=...} uses it.
		if len(matched) != 1 || matched[0].Name != sts.Spec.ServiceName || matched[0].Name != "shardkeeper" {
			t.Fatalf("the ServiceMonitor selects %d Services, want exactly the headless one, \"shardkeeper\" (each pod scraped once, as job \"shardkeeper\")", len(matched))
		}
		if len(sm.Spec.Endpoints) != 1 {
			t.Fatalf("%d endpoints, want 1", len(sm.Spec.Endpoints))
		}
		ep := sm.Spec.Endpoints[0]
		if ep.Path != "/metrics" || !slices.ContainsFunc(matched[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port && p.Port == 8080 }) {
			t.Fatalf("endpoint port %q path %q, want the Service's HTTP port and /metrics", ep.Port, ep.Path)
		}
		c := container(t, sts)
		if slices.Contains(c.Args, "--open-reads=false") {
			a := ep.Authorization
			tokenSecret, tokenKey := secretItem(t, pod.Spec, c, strings.Join(flagValues(c.Args, "--token-file"), ""))
			if a == nil || a.Credentials == nil || a.Credentials.Name != tokenSecret || a.Credentials.Key != tokenKey {
				t.Fatalf("the node closes reads (--open-reads=false) but the ServiceMonitor does not send the token from Secret %s key %s", tokenSecret, tokenKey)
			}
		}
	})

	t.Run("the registry's credentials come from the Secret", func(t *testing.T) {
		c := container(t, sts)
		conf := strings.Join(flagValues(c.Args, "--conf"), "")
		name, key := secretItem(t, pod.Spec, c, filepath.Join(conf, "global.yaml"))
		if name != m.secret.Name {
			t.Fatalf("--conf %s comes from Secret %q, want %q", conf, name, m.secret.Name)
		}
		global := m.secret.StringData[key]
		for _, want := range []string{"username:", "password:", "server-lists:"} {
			if !strings.Contains(global, want) {
				t.Errorf("the example Secret's %s lacks %s", key, want)
			}
		}
		_, tokenKey := secretItem(t, pod.Spec, c, strings.Join(flagValues(c.Args, "--token-file"), ""))
		if m.secret.StringData[tokenKey] == "" {
			t.Errorf("the example Secret has no %s", tokenKey)
		}
		for _, e := range c.Env {
			if e.Value != "" && regexp.MustCompile(`(?i)pass|token|secret`).MatchString(e.Name) {
				t.Errorf("env %s holds a secret in the manifest", e.Name)
			}
		}
	})

	t.Run("non-root, read-only root file system", func(t *testing.T) {
		c := container(t, sts)
		psc, sc := pod.Spec.SecurityContext, c.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Error("want runAsNonRoot and a non-zero runAsUser")
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Error("want readOnlyRootFilesystem and no privilege escalation")
		}
		for _, v := range pod.Spec.Volumes {
			if s := v.Secret; s != nil && s.DefaultMode != nil && *s.DefaultMode&0o004 == 0 && (psc == nil || psc.FSGroup == nil || *s.DefaultMode&0o040 == 0) {
				t.Errorf("volume %s (mode %o) is not readable by the container's user: set fsGroup and a group-readable mode", v.Name, *s.DefaultMode)
			}
		}
	})
}

// TestPrometheusRuleFromRulesFile checks the command docs/operations.md
// gives for the Prometheus Operator: the rules file indented under spec
// makes a PrometheusRule that decodes strictly.
func TestPrometheusRuleFromRulesFile(t *testing.T) {
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", prometheusRuleCommand(rulesFile)).Output()
	if err != nil {
		t.Fatalf("%s: %v", prometheusRuleCommand(rulesFile), err)
	}
	var pr monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict(out, &pr); err != nil {
		t.Fatalf("PrometheusRule: %v\n%s", err, out)
	}
	n := 0
	for _, g := range pr.Spec.Groups {
		n += len(g.Rules)
	}
	if want := bytes.Count(b, []byte("- record:")) + bytes.Count(b, []byte("- alert:")); n != want || pr.Name != "shardkeeper" {
		t.Fatalf("PrometheusRule %q with %d rules, want \"shardkeeper\" with %d", pr.Name, n, want)
	}
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), prometheusRuleCommand("deploy/"+rulesFile)) {
		t.Fatalf("docs/operations.md does not show the command %q", prometheusRuleCommand("deploy/"+rulesFile))
	}
}

func prometheusRuleCommand(path string) string {
	return `{ printf 'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: shardkeeper\nspec:\n'; sed 's/^/  /' ` + path + `; }`
}

func container(t *testing.T, sts *appsv1.StatefulSet) *corev1.Container {
	t.Helper()
	cs := sts.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return &cs[0]
}

func service(m manifests, name string) *corev1.Service {
	for _, s := range m.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func envVar(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func containerPort(c *corev1.Container, nameOrNumber string) *corev1.ContainerPort {
	for i, p := range c.Ports {
		if p.Name == nameOrNumber || fmt.Sprint(p.ContainerPort) == nameOrNumber {
			return &c.Ports[i]
		}
	}
	return nil
}

// flagValues returns the values of every --name=value or --name value in
// args.
func flagValues(args []string, name string) []string {
	var vals []string
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, name+"="):
			vals = append(vals, strings.TrimPrefix(a, name+"="))
		case a == name && i+1 < len(args):
			vals = append(vals, args[i+1])
		}
	}
	return vals
}

// secretItem returns the Secret and key whose file the container sees at
// path, failing the test when no Secret volume mount provides it.
func secretItem(t *testing.T, spec corev1.PodSpec, c *corev1.Container, path string) (name, key string) {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name || v.Secret == nil {
				continue
			}
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					return v.Secret.SecretName, it.Key
				}
			}
		}
	}
	t.Fatalf("no Secret volume provides %s", path)
	return "", ""
}

// TestNetworkPolicy: the pods admit traffic only through the NetworkPolicy,
// every port the container serves only from pods labelled
// shardkeeper.io/client, and the HTTP port (metrics) also from Prometheus:
// no rule admits everyone or an address range.
func TestNetworkPolicy(t *testing.T) {
	m := loadManifests(t)
	np := m.networkPolicy
	pod := m.statefulSet.Spec.Template
	c := container(t, m.statefulSet)
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
		t.Fatalf("NetworkPolicy pod selector %v does not select the pods %v (%v)", np.Spec.PodSelector, pod.Labels, err)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Fatalf("policy types %v, want Ingress", np.Spec.PolicyTypes)
	}
	admitted := map[string][]string{} // container port name -> who
	for i, rule := range np.Spec.Ingress {
		if len(rule.From) == 0 || len(rule.Ports) == 0 {
			t.Fatalf("ingress rule %d admits every peer or every port", i)
		}
		var who []string
		for _, peer := range rule.From {
			if peer.IPBlock != nil || peer.PodSelector == nil || len(peer.PodSelector.MatchLabels) == 0 {
				t.Fatalf("ingress rule %d: peer %+v is not a labelled pod", i, peer)
			}
			for k, v := range peer.PodSelector.MatchLabels {
				who = append(who, k+"="+v)
			}
		}
		for _, p := range rule.Ports {
			if p.Port == nil {
				t.Fatalf("ingress rule %d admits every port", i)
			}
			cp := containerPort(c, p.Port.String())
			if cp == nil || p.Protocol == nil || *p.Protocol != cp.Protocol {
				t.Fatalf("ingress rule %d: port %v %v is not a container port", i, p.Port, p.Protocol)
			}
			admitted[cp.Name] = append(admitted[cp.Name], who...)
		}
	}
	for _, cp := range c.Ports {
		if !slices.Contains(admitted[cp.Name], "shardkeeper.io/client=true") {
			t.Errorf("port %s is not admitted from shardkeeper.io/client=true pods: %v", cp.Name, admitted[cp.Name])
		}
		for _, who := range admitted[cp.Name] {
			if who != "shardkeeper.io/client=true" && (cp.Name != "http" || who != "app.kubernetes.io/name=prometheus") {
				t.Errorf("port %s admitted from %s", cp.Name, who)
			}
		}
	}
}

// TestMemoryLimitCoversTheBounds: the container's memory limit holds what
// the node may buffer at once by its bounds, with the Go runtime told to
// collect below it (GOMEMLIMIT).
func TestMemoryLimitCoversTheBounds(t *testing.T) {
	m := loadManifests(t)
	c := container(t, m.statefulSet)
	limit := c.Resources.Limits.Memory().Value()
	const (
		base       = 96 << 20   // runtime, registry clients, metadata state (85 MB measured idle)
		respClient = 3600 << 10 // keyserver: input, replies and a batch per RESP connection
	)
	respMax := keyserver.DefaultMaxClients // without the flag, the default must fit
	if v := flagValues(c.Args, "--resp-max-clients"); len(v) == 1 {
		fmt.Sscan(v[0], &respMax)
	}
	sessions := int64(mysqlfront.DefaultMaxConnections) * (connserver.Small + 64<<10) // small statements and gathered replies
	need := int64(base) + connserver.DefaultBudget + sessions + 2*3*statistics.MaxBytes + int64(respMax)*respClient
	if need > limit {
		t.Fatalf("the node may buffer %d MiB at once, over the %d MiB limit", need>>20, limit>>20)
	}
	gomem := envVar(c, "GOMEMLIMIT")
	if gomem == nil || gomem.Value == "" {
		t.Fatal("no GOMEMLIMIT: the runtime does not know the limit")
	}
	var mib int64
	if _, err := fmt.Sscanf(gomem.Value, "%dMiB", &mib); err != nil || mib<<20 <= need || mib<<20 >= limit {
		t.Fatalf("GOMEMLIMIT %q (%v): want between the bounds' %d MiB and the limit's %d MiB", gomem.Value, err, need>>20, limit>>20)
	}
	t.Logf("memory: bounds %d MiB, GOMEMLIMIT %d MiB, limit %d MiB", need>>20, mib, limit>>20)
}
