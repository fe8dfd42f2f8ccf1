//go:build e2e && linux

package deploy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cline-mcp/cline-mcp/bridge/service"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// e2eImage is the fake CLI image with the current tree's cline-mcp, k8s helper, egress sidecar
// and mcpcall: the service's image and its runs' image on the test cluster.
const e2eImage = "cline-mcp/deploy-e2e:latest"

// e2ePort is the service's port here: the pod shares the cluster's network namespace (below).
const e2ePort = 19080

func buildE2EImage(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for bin, pkg := range map[string]string{"cline-mcp": "./cmd/cline-mcp", "cline-mcp-k8s-helper": "./cmd/cline-mcp-k8s-helper",
		"cline-mcp-egress": "./cmd/cline-mcp-egress", "mcpcall": "./deploy/internal/mcpcall"} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, bin), pkg)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+mcpsession.EngineArch())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	df := "FROM " + mcpsession.FakeImage + "\nCOPY cline-mcp cline-mcp-k8s-helper cline-mcp-egress mcpcall /usr/local/bin/\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "build", "-q", "-t", e2eImage, dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
}

// e2eProviders is the provider settings the fake CLI answers with (the e2e harness's).
const e2eProviders = `{"version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
 "providers": {"openai-compatible": {"settings": {"apiKey": "sk-test-123", "model": "fake-model",
  "baseUrl": "http://127.0.0.1:18080/v1", "provider": "openai-compatible"},
  "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}}}`

const tenantToken = "deploy-e2e-token"

// workDir is the tenant's root in the service's pod, where its calls' cwd lies.
const workDir = "/srv/work"

// adapt turns the base into what the test cluster can run, changing only what it must. The
// cluster's API server listens on the loopback of its network namespace and pods have no route
// to it, so the service pod shares that namespace (hostNetwork, which the restricted Pod Security
// Standard forbids: its namespace is privileged here) and reaches the API server there; the
// runs namespace keeps restricted. The images are imported, never pulled.
func adapt(m *manifests) {
	m.namespaces[serviceNS].Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	spec := &m.deployments[0].Spec.Template.Spec
	spec.HostNetwork = true
	c := &spec.Containers[0]
	c.Image, c.ImagePullPolicy = e2eImage, corev1.PullNever
	for i, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--http="):
			c.Args[i] = "--http=:" + itoa(e2ePort)
		case strings.HasPrefix(a, "--k8s-image="):
			c.Args[i] = "--k8s-image=" + e2eImage
		}
	}
	c.Args = append(c.Args, "--k8s-cpu=500m", "--k8s-memory=512Mi")
	c.Ports[0].ContainerPort = e2ePort
	c.Resources.Requests = corev1.ResourceList{}
	c.Env = append(c.Env, corev1.EnvVar{Name: "CLINE_MCP_K8S_PULL", Value: "Never"},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"}, corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: "16443"})
	// The tenant's directory: an empty volume of the service's pod.
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "work", MountPath: workDir})
	m.secrets["cline-mcp-tokens"].StringData["tokens.json"] = `{"tenants": [{"name": "alpha", "root": "` + workDir + `", "tokenSha256": ["` +
		service.Hash(tenantToken) + `"], "maxConcurrent": 1, "maxQueued": 0, "maxJobs": 0}]}`
	m.secrets["cline-mcp-provider"].StringData["providers.json"] = e2eProviders
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// apply creates every object of m, namespaces first.
func apply(t *testing.T, cs *kubernetes.Clientset, m *manifests) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range m.namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	}
	var errs []error
	add := func(_ any, err error) { errs = append(errs, err) }
	for _, o := range m.accounts {
		add(cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{}))
	}
	for _, o := range m.roles {
		add(cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{}))
	}
	for _, o := range m.bindings {
		add(cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{}))
	}
	for _, o := range m.secrets {
		add(cs.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{}))
	}
	for _, o := range m.policies {
		add(cs.NetworkingV1().NetworkPolicies(o.Namespace).Create(ctx, o, metav1.CreateOptions{}))
	}
	for _, o := range m.services {
		add(cs.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{}))
	}
	for _, o := range m.deployments {
		add(cs.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{}))
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// world is the applied base and a namespace of callers.
type world struct {
	c       *testcluster.Cluster
	cs      *kubernetes.Clientset
	runners string
	podNet  bool // callers on the pod network (else the host's, where the service is)
}

// caller starts a pod in the runners' namespace (no service account token, no RBAC, no Docker)
// that runs mcpcall with args against the service, and returns its name.
func (w *world) caller(t *testing.T, args ...string) string {
	t.Helper()
	no, uid := false, int64(1000)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "caller-"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no, HostNetwork: !w.podNet,
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsNonRoot: boolPtr(true)},
			Containers: []corev1.Container{{Name: "mcpcall", Image: e2eImage, ImagePullPolicy: corev1.PullNever,
				Command: append([]string{"/usr/local/bin/mcpcall"}, args...)}}}}
	made, err := w.cs.CoreV1().Pods(w.runners).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return made.Name
}

// result waits for caller pod name to end and returns its phase and log.
func (w *world) result(t *testing.T, name string, within time.Duration) (corev1.PodPhase, string) {
	t.Helper()
	var phase corev1.PodPhase
	if !mcpsession.Eventually(within, func() bool {
		p, err := w.cs.CoreV1().Pods(w.runners).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			phase = p.Status.Phase
		}
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed
	}) {
		t.Fatalf("caller %s did not end (phase %q)\nservice:\n%s", name, phase, w.serviceLog())
	}
	b, _ := w.cs.CoreV1().Pods(w.runners).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	return phase, string(b)
}

func (w *world) servicePod() *corev1.Pod {
	list, _ := w.cs.CoreV1().Pods(serviceNS).List(context.Background(), metav1.ListOptions{})
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			for _, s := range p.Status.ContainerStatuses {
				if s.Ready {
					return p
				}
			}
		}
	}
	return nil
}

func (w *world) serviceLog() string {
	list, _ := w.cs.CoreV1().Pods(serviceNS).List(context.Background(), metav1.ListOptions{})
	var out strings.Builder
	for _, p := range list.Items {
		b, _ := w.cs.CoreV1().Pods(serviceNS).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
		out.WriteString("--- " + p.Name + "\n" + string(b))
	}
	return out.String()
}

func (w *world) runPods() int {
	list, err := w.cs.CoreV1().Pods(runsNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return -1
	}
	return len(list.Items)
}

func boolPtr(b bool) *bool { return &b }

// TestDeployOnCluster applies the base (adapted as adapt says) to the test cluster and calls the
// service from pods of a runners' namespace with nothing but a bearer token: tools/list and an
// ask_cline that runs in a pod of the runs namespace (which enforces the restricted Pod Security
// Standard); with the tenant's one slot taken, the next call is rate_limited with a retry hint and
// /metrics counts it; the service pod killed (no grace) mid-run leaves its caller an error and,
// once its replacement started, no run pod behind.
func TestDeployOnCluster(t *testing.T) {
	buildE2EImage(t) // before the cluster: it is shared by every test binary of the machine, one at a time
	c := testcluster.Start(t)
	c.ImportDockerImage(t, e2eImage)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	m := load(t)
	adapt(m)
	apply(t, cs, m)
	runners := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cline-mcp-runners", Labels: map[string]string{"cline-mcp.io/runners": "true"}}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), runners, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), runners.Name, metav1.DeleteOptions{})
	})
	w := &world{c: c, cs: cs, runners: runners.Name}
	if !mcpsession.Eventually(3*time.Minute, func() bool { return w.servicePod() != nil }) {
		t.Fatalf("the service pod never became ready\nservice:\n%s\nkubelet:\n%s", w.serviceLog(), c.LogTail("kubelet", 30))
	}
	first := w.servicePod().Name
	url := "http://127.0.0.1:" + itoa(e2ePort) + "/mcp"

	phase, out := w.result(t, w.caller(t, "list", url, tenantToken), 2*time.Minute)
	if phase != corev1.PodSucceeded || !strings.Contains(out, `"ask_cline"`) {
		t.Fatalf("tools/list from a pod: %s %s", phase, out)
	}
	phase, out = w.result(t, w.caller(t, "ask", url, tenantToken, workDir, "Reply with PONG"), 3*time.Minute)
	if phase != corev1.PodSucceeded || !strings.Contains(out, `"ok":true`) || !strings.Contains(out, `"isolation":"kubernetes"`) {
		t.Fatalf("ask_cline from a pod: %s %s\nservice:\n%s", phase, out, w.serviceLog())
	}
	phase, out = w.result(t, w.caller(t, "list", url, "not-a-token"), 2*time.Minute)
	if phase != corev1.PodFailed || !strings.Contains(out, "authorization required") {
		t.Errorf("a wrong token: %s %s, want a failed call: authorization required", phase, out)
	}

	hang := w.caller(t, "ask", url, tenantToken, workDir, "Wait fake:hang")
	if !mcpsession.Eventually(2*time.Minute, func() bool { return w.runPods() == 1 }) {
		t.Fatalf("the hanging call's run pod never appeared\nservice:\n%s", w.serviceLog())
	}
	phase, out = w.result(t, w.caller(t, "ask", url, tenantToken, workDir, "Reply with PONG"), 2*time.Minute)
	if phase != corev1.PodSucceeded || !strings.Contains(out, `"kind":"rate_limited"`) || !strings.Contains(out, `"retryable":true`) {
		t.Errorf("a call past the tenant's concurrency: %s %s, want rate_limited and retryable", phase, out)
	}
	phase, out = w.result(t, w.caller(t, "get", "http://127.0.0.1:"+itoa(e2ePort)+"/metrics"), 2*time.Minute)
	for _, want := range []string{`cline_mcp_refusals_total{reason=\"rate_limited\"} 1`, `cline_mcp_runs_in_flight 1`,
		`cline_mcp_calls_total{tool=\"ask_cline\",outcome=\"ok\"} 1`, `cline_mcp_refusals_total{reason=\"auth\"} `} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s: %s %s", want, phase, out)
		}
	}

	zero := int64(0)
	if err := cs.CoreV1().Pods(serviceNS).Delete(context.Background(), first, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	polls := 0
	for ; polls < 1200 && w.runPods() != 0; polls++ { // 100 ms apart; the run pod's own deadline is longer
		time.Sleep(100 * time.Millisecond)
	}
	if n := w.runPods(); n != 0 {
		t.Errorf("%d run pod(s) left after the service pod was killed\nservice:\n%s", n, w.serviceLog())
	}
	phase, out = w.result(t, hang, 2*time.Minute)
	t.Logf("the caller of the killed service: %s %s", phase, strings.TrimSpace(out))
	// Killed at once, the service leaves its caller a broken request; given its two seconds of
	// SIGTERM it may still answer the call as cancelled. Either says the call did not run.
	broken := phase == corev1.PodFailed && strings.Contains(out, "mcpcall: ask_cline:")
	cancelled := phase == corev1.PodSucceeded && strings.Contains(out, `"ok":false`) && strings.Contains(out, `"kind":"cancelled"`)
	if !broken && !cancelled {
		t.Errorf("the caller of a killed service: %s %s, want a failed request or a cancelled result", phase, out)
	}
	if !mcpsession.Eventually(3*time.Minute, func() bool { p := w.servicePod(); return p != nil && p.Name != first }) {
		t.Fatalf("no replacement service pod became ready\nservice:\n%s", w.serviceLog())
	}
	t.Logf("run pods gone %d polls (100 ms) after the delete; the replacement swept them: %v", polls,
		strings.Contains(w.serviceLog(), "removed containers left by a crashed server"))
	phase, out = w.result(t, w.caller(t, "list", url, tenantToken), 2*time.Minute)
	if phase != corev1.PodSucceeded || !strings.Contains(out, `"ask_cline"`) {
		t.Errorf("tools/list from the replacement: %s %s", phase, out)
	}
	pols, _ := cs.NetworkingV1().NetworkPolicies(runsNS).List(context.Background(), metav1.ListOptions{})
	if pols == nil || len(pols.Items) != 1 || pols.Items[0].Name != "default-deny" {
		t.Errorf("policies left in %s: %v", runsNS, pols)
	}
}

// TestDeployNetworkPolicy: the base's policies on the test cluster, which enforces NetworkPolicy,
// around a stand-in with the service's pod labels on the pod network (the service itself must
// use the host network there, which policies do not select): before them a pod of an unlabelled
// namespace reaches it (the marker); under them a pod of a namespace labelled as runners still
// does, and the unlabelled namespace's pod does not.
func TestDeployNetworkPolicy(t *testing.T) {
	buildE2EImage(t)
	c := testcluster.Start(t)
	c.RequireNetworkPolicy(t)
	c.ImportDockerImage(t, e2eImage)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	m := load(t)
	ctx := context.Background()
	names := map[string]map[string]string{"np-service": nil, "np-runners": {"cline-mcp.io/runners": "true"}, "np-other": nil}
	for name, labels := range names {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	no := false
	tmpl := m.deployments[0].Spec.Template
	stand := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stand-in", Labels: tmpl.Labels},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: &no, SecurityContext: tmpl.Spec.SecurityContext,
			Containers: []corev1.Container{{Name: "listen", Image: e2eImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/usr/local/bin/mcpcall", "listen", ":8080"}, SecurityContext: tmpl.Spec.Containers[0].SecurityContext}}}}
	if _, err := cs.CoreV1().Pods("np-service").Create(ctx, stand, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	if !mcpsession.Eventually(2*time.Minute, func() bool {
		p, err := cs.CoreV1().Pods("np-service").Get(ctx, "stand-in", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			ip = p.Status.PodIP
		}
		return ip != ""
	}) {
		t.Fatalf("the stand-in never ran\nkubelet:\n%s", c.LogTail("kubelet", 30))
	}
	url := "http://" + ip + ":8080/healthz"
	probe := func(ns string) map[string]any {
		w := &world{c: c, cs: cs, runners: ns, podNet: true}
		phase, out := w.result(t, w.caller(t, "probe", url, "10"), 2*time.Minute)
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); phase != corev1.PodSucceeded || err != nil {
			t.Fatalf("probe from %s: %s %s", ns, phase, out)
		}
		return r
	}
	if r := probe("np-other"); r["last"] != "ok" {
		t.Fatalf("without the policies a pod of another namespace cannot reach the stand-in (%v): the test would prove nothing", r)
	}
	for _, p := range m.policies {
		if p.Namespace != serviceNS {
			continue
		}
		p.Namespace = "np-service"
		if _, err := cs.NetworkingV1().NetworkPolicies("np-service").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runners, other := probe("np-runners"), probe("np-other")
	t.Logf("under the policies: from the runners' namespace %v, from another %v", runners, other)
	if runners["last"] != "ok" {
		t.Errorf("a pod of the runners' namespace cannot reach the service: %v", runners)
	}
	if other["ok"] != float64(0) {
		t.Errorf("a pod of an unlabelled namespace reached the service: %v", other)
	}
}
