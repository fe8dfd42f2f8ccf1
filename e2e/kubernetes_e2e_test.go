//go:build e2e && linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sclient "k8s.io/client-go/kubernetes"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/testcluster"
)

func init() {
	afterAll = append(afterAll, func(int) error { testcluster.Stop(); return nil })
}

var k8sImport sync.Once

// TestKubernetesTools: with --isolation kubernetes the built server runs every run tool in a pod
// of the real test cluster (the fake image, imported on the node): ask_cline answers,
// apply_cline_edits brings its edit back as a diff on the host, ask_cline_workspace runs on a
// disposable worktree; each result says kubernetes and what the stored pod enforced, and no pod
// or policy is left in the namespace.
// k8sWorld is the test cluster with a namespace of the test's own and the fake image (plus
// the helper) imported on its node.
type k8sWorld struct {
	c  *testcluster.Cluster
	cs *k8sclient.Clientset
	ns string
}

func newK8sWorld(t *testing.T) k8sWorld {
	t.Helper()
	c := testcluster.Start(t)
	k8sImport.Do(func() {
		if err := mcpsession.BuildK8sFakeImage(); err != nil {
			t.Fatal(err)
		}
		c.ImportDockerImage(t, mcpsession.K8sFakeImage)
	})
	cs, err := k8sclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cline-mcp-e2e-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return k8sWorld{c: c, cs: cs, ns: ns.Name}
}

// args are the server flags of a kubernetes floor on this world.
func (w k8sWorld) args() []string {
	return []string{"--isolation", "kubernetes", "--k8s-kubeconfig", w.c.Kubeconfig, "--k8s-namespace", w.ns,
		"--k8s-image", mcpsession.K8sFakeImage, "--k8s-cpu", "500m", "--k8s-memory", "512Mi"}
}

// pods are the pods left in the world's namespace.
func (w k8sWorld) pods() int {
	list, _ := w.cs.CoreV1().Pods(w.ns).List(context.Background(), metav1.ListOptions{})
	if list == nil {
		return -1
	}
	return len(list.Items)
}

func TestKubernetesTools(t *testing.T) {
	w := newK8sWorld(t)
	c := w.c
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	// The pods run as uid 1000 (the server runs as root here): the checkout must be theirs to read.
	if out, err := exec.Command("chmod", "-R", "a+rwX", e.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, w.args()...)

	for _, tc := range []struct{ tool, prompt string }{
		{"ask_cline", "Reply with PONG"},
		{"apply_cline_edits", "Edit fake:edit_many?modify=README.md"},
		{"ask_cline_workspace", "Reply with PONG"},
	} {
		res, sc := e.call(tc.tool, map[string]any{"prompt": tc.prompt})
		if sc["ok"] != true {
			t.Fatalf("%s: %v: %v\nkubelet:\n%s", tc.tool, sc["kind"], sc["message"], c.LogTail("kubelet", 30))
		}
		if sc["isolation"] != "kubernetes" || fmt.Sprint(sc["attemptIsolation"]) != "[kubernetes]" {
			t.Errorf("%s: isolation %v %v, want kubernetes", tc.tool, sc["isolation"], sc["attemptIsolation"])
		}
		enf, ctr := enforcementOf(t, sc)
		if enf["isolation"] != "kubernetes" || ctr == nil || ctr["engine"] != "kubernetes" || ctr["readOnlyRoot"] != true ||
			ctr["noNewPrivileges"] != true || fmt.Sprint(ctr["capDrop"]) != "[ALL]" || ctr["user"] != "1000:1000" ||
			!strings.Contains(fmt.Sprint(ctr["network"]), "deny-all") {
			t.Errorf("%s: enforcement %v", tc.tool, enf)
		}
		if tc.tool == "apply_cline_edits" && !strings.Contains(mcpsession.Str(sc, "diff"), "README.md") {
			t.Errorf("apply_cline_edits: no diff of README.md: %v (%s)", sc["diff"], mcpsession.Text(res))
		}
	}
	pols, _ := w.cs.NetworkingV1().NetworkPolicies(w.ns).List(context.Background(), metav1.ListOptions{})
	if n := w.pods(); n != 0 || len(pols.Items) > 0 {
		t.Errorf("left in the namespace: %d pods, %d policies", n, len(pols.Items))
	}
}

// TestKubernetesServerKilled: a server killed (SIGKILL) during a call does not leave its pod
// running: its watchdog (the lifeline) deletes the pod and its NetworkPolicy at once — gone,
// not ended by the pod's own deadline (which would leave a Failed pod) — and doctor
// --isolation kubernetes reports the cluster, the permissions and whether the cluster enforces
// the runs' NetworkPolicy.
func TestKubernetesServerKilled(t *testing.T) {
	w := newK8sWorld(t)
	e := prepareEnv(t)
	if out, err := exec.Command("chmod", "-R", "a+rwX", e.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, w.args()...)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = e.sess.CallErr(ctx, "ask_cline", map[string]any{"prompt": "Wait fake:hang", "cwd": e.work}, nil)
	}()
	if !mcpsession.Eventually(60*time.Second, func() bool { return w.pods() == 1 }) {
		t.Fatal("the call's pod never appeared")
	}
	list, _ := w.cs.CoreV1().Pods(w.ns).List(context.Background(), metav1.ListOptions{})
	if list == nil || len(list.Items) != 1 || list.Items[0].Spec.ActiveDeadlineSeconds == nil {
		t.Fatal("the call's pod has no deadline")
	}
	deadline := time.Duration(*list.Items[0].Spec.ActiveDeadlineSeconds) * time.Second
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	// Polls of 100 ms, bounded well inside the pod's own deadline (a minute and more).
	polls, gone := 0, false
	for ; polls < int(deadline/(200*time.Millisecond)) && !gone; polls++ {
		time.Sleep(100 * time.Millisecond)
		pols, _ := w.cs.NetworkingV1().NetworkPolicies(w.ns).List(context.Background(), metav1.ListOptions{})
		gone = w.pods() == 0 && pols != nil && len(pols.Items) == 0
	}
	t.Logf("the dead server's pod and policy were gone after %d polls (its deadline: %v)", polls, deadline)
	if !gone {
		t.Fatalf("the dead server's pod or policy is still there after %d polls: %d pods", polls, w.pods())
	}
	// The watchdog did it (it shares the server's stderr), not the pod's end.
	if !mcpsession.Eventually(10*time.Second, func() bool { return strings.Contains(e.sess.Stderr(), "containers=1") }) {
		t.Errorf("the watchdog did not say it removed the pod:\n%s", e.sess.Stderr())
	}

	out, err := exec.Command(bins.ClineMCP, append([]string{"doctor"}, w.args()...)...).CombinedOutput()
	// doctor's probe finds out what the test cluster does with NetworkPolicy (kube-router
	// enforces it when it was built).
	egress := `(?m)^WARN k8s egress +NetworkPolicy NOT enforced`
	if w.c.EnforcesNetworkPolicy {
		egress = `(?m)^OK +k8s egress +NetworkPolicy enforced`
	}
	if !strings.Contains(string(out), "OK   kubernetes") || !strings.Contains(string(out), "OK   k8s permissions") ||
		!regexp.MustCompile(egress).Match(out) {
		t.Errorf("doctor (%v), want %q:\n%s", err, egress, out)
	}
	if n := w.pods(); n != 0 {
		t.Errorf("doctor's probe left %d pods", n)
	}
}

// TestKubernetesACPSession: the ACP engine in run pods (its stdin through pods/attach): a
// conversation continues with its sessionId in a new pod (the session's CLI data comes back to
// its dir under --sessions-dir and goes into the next pod), an analysis edit is rejected before it
// runs, and no pod is left.
func TestKubernetesACPSession(t *testing.T) {
	w := newK8sWorld(t)
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	if out, err := exec.Command("chmod", "-R", "a+rwX", e.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	sessions := filepath.Join(e.root, "sessions")
	e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, append(w.args(), "--cline-protocol", "acp", "--sessions-dir", sessions)...)
	_, first := e.call("ask_cline", map[string]any{"prompt": "remember this fake:history"})
	wantOK(t, first)
	id, _ := first["sessionId"].(string)
	if id == "" || first["isolation"] != "kubernetes" {
		t.Fatalf("first: %v", first)
	}
	_, second := e.call("ask_cline", map[string]any{"prompt": "fake:history", "sessionId": id})
	wantOK(t, second)
	if got, _ := second["text"].(string); !strings.HasPrefix(got, "earlier=1 first=remember this") || second["turn"] != float64(2) {
		t.Errorf("the second turn (a new pod) did not see the first: %q turn %v", got, second["turn"])
	}
	if data, _ := filepath.Glob(filepath.Join(sessions, "data", "*", "sessions", id)); len(data) != 1 {
		t.Errorf("the session's CLI data is not in its own dir under --sessions-dir: %v", data)
	}
	_, edit := e.call("ask_cline", map[string]any{"prompt": "fake:edit?path=hello.txt"})
	wantOK(t, edit)
	if _, err := os.Stat(filepath.Join(e.work, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("an analysis edit was written: %v", err)
	}
	if rej, _ := edit["rejectedToolCalls"].([]any); len(rej) != 1 {
		t.Errorf("rejectedToolCalls %v, want the editor call", edit["rejectedToolCalls"])
	}
	if n := w.pods(); n != 0 {
		t.Errorf("%d pods left", n)
	}
}
