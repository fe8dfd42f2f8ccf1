package deploy

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/cline-mcp/cline-mcp/bridge/service"
)

const base = "kustomize/base"

// manifests are the objects of the kustomize base, decoded strictly (an unknown field fails).
type manifests struct {
	namespaces  map[string]*corev1.Namespace
	accounts    []*corev1.ServiceAccount
	roles       []*rbacv1.Role
	bindings    []*rbacv1.RoleBinding
	secrets     map[string]*corev1.Secret
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	policies    []*networkingv1.NetworkPolicy
	namespaced  []namespaced
}

type namespaced struct{ kind, name, namespace string }

// load reads the base as kustomize would: the kustomization's resources, each split into its
// YAML documents.
func load(t *testing.T) *manifests {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(base, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Images     []struct {
			Name    string `json:"name"`
			NewTag  string `json:"newTag"`
			NewName string `json:"newName"`
		} `json:"images"`
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(base, "*.yaml"))
	if len(k.Resources) != len(files)-1 {
		t.Errorf("kustomization lists %d resources, the directory holds %d other YAML files", len(k.Resources), len(files)-1)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	m := &manifests{namespaces: map[string]*corev1.Namespace{}, secrets: map[string]*corev1.Secret{}}
	for _, res := range k.Resources {
		b, err := os.ReadFile(filepath.Join(base, res))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			obj, gvk, err := dec.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s, document %d: %v", res, i+1, err)
			}
			m.add(t, res, obj, gvk.Kind)
		}
	}
	return m
}

func (m *manifests) add(t *testing.T, file string, obj runtime.Object, kind string) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		m.namespaces[o.Name] = o
		return
	case *corev1.ServiceAccount:
		m.accounts = append(m.accounts, o)
	case *rbacv1.Role:
		m.roles = append(m.roles, o)
	case *rbacv1.RoleBinding:
		m.bindings = append(m.bindings, o)
	case *corev1.Secret:
		m.secrets[o.Name] = o
	case *appsv1.Deployment:
		m.deployments = append(m.deployments, o)
	case *corev1.Service:
		m.services = append(m.services, o)
	case *networkingv1.NetworkPolicy:
		m.policies = append(m.policies, o)
	default:
		t.Fatalf("%s: a %s the test does not know", file, kind)
	}
	acc, _ := obj.(interface{ GetName() string })
	ns, _ := obj.(interface{ GetNamespace() string })
	m.namespaced = append(m.namespaced, namespaced{kind, acc.GetName(), ns.GetNamespace()})
}

const (
	serviceNS = "cline-mcp"
	runsNS    = "cline-mcp-runs"
)

// TestManifestsConsistent: every object parses strictly and lives in one of the base's two
// namespaces; one Deployment, whose account is the one the RoleBinding in the runs namespace
// names; its flags name that namespace and files inside its Secret mounts; the Service and the
// NetworkPolicy select its pods and port; the pod is hardened and probed.
func TestManifestsConsistent(t *testing.T) {
	m := load(t)
	for _, o := range m.namespaced {
		if o.namespace != serviceNS && o.namespace != runsNS {
			t.Errorf("%s %s: namespace %q, want %s or %s", o.kind, o.name, o.namespace, serviceNS, runsNS)
		}
	}
	for _, ns := range []string{serviceNS, runsNS} {
		if m.namespaces[ns] == nil || m.namespaces[ns].Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Errorf("namespace %s: missing or not enforcing the restricted Pod Security Standard", ns)
		}
	}
	if len(m.deployments) != 1 || len(m.accounts) != 1 || len(m.bindings) != 1 || len(m.services) != 1 {
		t.Fatalf("want one Deployment, ServiceAccount, RoleBinding, Service; got %d %d %d %d", len(m.deployments), len(m.accounts), len(m.bindings), len(m.services))
	}
	d, sa, rb := m.deployments[0], m.accounts[0], m.bindings[0]
	pod := d.Spec.Template
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the Deployment must run one replica, replaced (Recreate): got %d, %s", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	if pod.Spec.ServiceAccountName != sa.Name || sa.Namespace != d.Namespace {
		t.Errorf("the pod runs as %s, the account is %s/%s", pod.Spec.ServiceAccountName, sa.Namespace, sa.Name)
	}
	if rb.Namespace != runsNS || rb.RoleRef.Name != m.roles[0].Name || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != sa.Name || rb.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("RoleBinding: %+v", rb)
	}
	if pod.Spec.Hostname == "" {
		t.Error("no fixed hostname: a replacement pod would not sweep the run pods of a killed one")
	}
	checkContainer(t, m, pod.Spec)
	for k, v := range d.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("the Deployment's selector %s=%s does not select its pods", k, v)
		}
	}
	svc := m.services[0]
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("the Service's selector %s=%s does not select the pods", k, v)
		}
	}
	if svc.Spec.Ports[0].TargetPort.String() != pod.Spec.Containers[0].Ports[0].Name {
		t.Errorf("the Service targets %s, the container's port is %s", svc.Spec.Ports[0].TargetPort.String(), pod.Spec.Containers[0].Ports[0].Name)
	}
	checkPolicies(t, m, pod.Labels, pod.Spec.Containers[0].Ports[0].ContainerPort)
}

// checkContainer: the flags, the Secret mounts and the hardening of the service's container.
func checkContainer(t *testing.T, m *manifests, spec corev1.PodSpec) {
	t.Helper()
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("want one container, got %d (+%d init)", len(spec.Containers), len(spec.InitContainers))
	}
	c := spec.Containers[0]
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		k, v, _ := strings.Cut(a, "=")
		flags[k] = v
	}
	if !slices.Equal(c.Command, []string{"/usr/local/bin/cline-mcp"}) || c.Args[0] != "serve" || flags["--isolation"] != "kubernetes" || flags["--k8s-namespace"] != runsNS || flags["--http"] != ":8080" {
		t.Errorf("command %q, args %q", c.Command, c.Args)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm
	}
	secretOf := map[string]string{} // volume → Secret
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secretOf[v.Name] = v.Secret.SecretName
		}
	}
	if !slices.Contains(slices.Collect(maps.Values(secretOf)), "cline-mcp-tokens") || !strings.HasPrefix(flags["--http-tokens"], mounts["tokens"].MountPath+"/") {
		t.Errorf("--http-tokens %s is not in the tokens Secret's mount %s", flags["--http-tokens"], mounts["tokens"].MountPath)
	}
	if p := mounts["provider"]; secretOf["provider"] != "cline-mcp-provider" || !p.ReadOnly || p.SubPath != "providers.json" ||
		p.MountPath != envOf(c, "CLINE_DATA_DIR")+"/settings/providers.json" {
		t.Errorf("the provider Secret is not mounted as $CLINE_DATA_DIR/settings/providers.json: %+v", p)
	}
	for name, secret := range m.secrets {
		if secret.Namespace != serviceNS || !slices.Contains(slices.Collect(maps.Values(secretOf)), name) {
			t.Errorf("Secret %s/%s: not mounted by the service's pod", secret.Namespace, name)
		}
	}
	sc, psc := c.SecurityContext, spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || *sc.Privileged ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || psc.SeccompProfile == nil {
		t.Errorf("the container is not hardened: pod %+v, container %+v", psc, sc)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != c.Ports[0].Name {
			t.Errorf("%s probe: %+v", name, p)
		}
	}
}

// checkPolicies: the service answers only the runners' (and the metrics') namespaces on its
// port; each namespace denies everything else by default.
func checkPolicies(t *testing.T, m *manifests, podLabels map[string]string, port int32) {
	t.Helper()
	denies := map[string]bool{}
	var svc *networkingv1.NetworkPolicy
	for _, p := range m.policies {
		if len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.Ingress) == 0 && len(p.Spec.Egress) == 0 &&
			slices.Equal(p.Spec.PolicyTypes, []networkingv1.PolicyType{"Ingress", "Egress"}) {
			denies[p.Namespace] = true
			continue
		}
		svc = p
	}
	if !denies[serviceNS] || !denies[runsNS] {
		t.Errorf("default deny of ingress and egress: %v, want both namespaces", denies)
	}
	if svc == nil || svc.Namespace != serviceNS || len(svc.Spec.Ingress) != 1 {
		t.Fatalf("the service's policy: %+v", svc)
	}
	for k, v := range svc.Spec.PodSelector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("the service's policy selects %s=%s, not its pods", k, v)
		}
	}
	in := svc.Spec.Ingress[0]
	if len(in.Ports) != 1 || in.Ports[0].Port.IntVal != port {
		t.Errorf("ingress ports: %+v, want only %d", in.Ports, port)
	}
	var from []string
	for _, peer := range in.From {
		if peer.PodSelector != nil || peer.IPBlock != nil || peer.NamespaceSelector == nil || len(peer.NamespaceSelector.MatchLabels) != 1 {
			t.Errorf("an ingress peer other than a labelled namespace: %+v", peer)
			continue
		}
		for k, v := range peer.NamespaceSelector.MatchLabels {
			from = append(from, k+"="+v)
		}
	}
	slices.Sort(from)
	if !slices.Equal(from, []string{"cline-mcp.io/metrics=true", "cline-mcp.io/runners=true"}) {
		t.Errorf("ingress from %v", from)
	}
}

// TestRoleIsTheExecutors: the Role grants exactly the permissions docs/kubernetes.md lists for
// the executor, in the runs namespace only.
func TestRoleIsTheExecutors(t *testing.T) {
	m := load(t)
	if len(m.roles) != 1 || m.roles[0].Namespace != runsNS {
		t.Fatalf("want one Role in %s, got %d", runsNS, len(m.roles))
	}
	doc, err := os.ReadFile("../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Permissions.*?```yaml\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/kubernetes.md: no yaml block under ## Permissions")
	}
	var documented rbacv1.Role
	if err := yaml.Unmarshal(bytes.Split(block[1], []byte("\n---\n"))[0], &documented); err != nil {
		t.Fatal(err)
	}
	got, want := grants(m.roles[0].Rules), grants(documented.Rules)
	if !slices.Equal(got, want) {
		t.Errorf("the Role grants\n%v\nthe executor needs\n%v", got, want)
	}
	for _, must := range []string{"create pods", "delete pods", "create pods/attach", "create pods/exec", "get pods/log", "create networking.k8s.io/networkpolicies"} {
		if !slices.Contains(got, must) {
			t.Errorf("the Role lacks %s", must)
		}
	}
}

// grants is the sorted "verb [group/]resource" pairs of rules.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			out = append(out, "restricted rule")
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g != "" {
						out = append(out, v+" "+g+"/"+res)
					} else {
						out = append(out, v+" "+res)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestExampleSecrets: the example token file is one the service accepts, and holds hashes only;
// the example provider settings hold no real key.
func TestExampleSecrets(t *testing.T) {
	m := load(t)
	tokens := m.secrets["cline-mcp-tokens"].StringData["tokens.json"]
	p := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(p, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	toks, err := service.LoadTokens(p, nil)
	if err != nil {
		t.Fatalf("the example token file: %v", err)
	}
	if ten, ok := toks.Lookup("example-token-change-me"); !ok || ten.Name != "example" {
		t.Errorf("the example hash is not of the token the comment names: %v %v", ten, ok)
	}
	if !strings.Contains(m.secrets["cline-mcp-provider"].StringData["providers.json"], `"apiKey": "REPLACE-ME"`) {
		t.Error("the example provider settings should name a placeholder key")
	}
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
