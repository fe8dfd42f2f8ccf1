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

// TestKubernetesACPSession: the ACP engine in run pods (its stdin through pods/attach) keeps a
// conversation's pod between turns. Turn 2 runs in turn 1's pod (the same pod name, and the file
// turn 1 planted in the pod's /tmp is there), and what each turn wrote in the session's data dir
// is on the host right after it (brought back between turns); another session gets a pod of its
// own without the planted file; an analysis edit is rejected before it runs; when the warm
// idle time ends no pod is left, and the session goes on in a new pod with its history. A server
// SIGKILLed while a session's pod is kept leaves no pod.
func TestKubernetesACPSession(t *testing.T) {
	w := newK8sWorld(t)
	e, sessions := acpPodServer(t, w, "--warm-idle", "30s", "--warm-agents", "3")
	_, first := e.call("ask_cline", map[string]any{"prompt": "remember this " + plant})
	wantOK(t, first)
	id, _ := first["sessionId"].(string)
	if id == "" || first["isolation"] != "kubernetes" {
		t.Fatalf("first: %v", first)
	}
	data := sessionData(t, sessions, id)
	host1 := readTrimmed(filepath.Join(data, "host1"))
	if host1 == "" {
		t.Fatalf("turn 1's data did not come back from its pod (no host1 in %s): %v", data, first)
	}
	if n := w.pods(); n != 1 {
		t.Fatalf("after turn 1 the namespace has %d pods, want the session's one kept", n)
	}
	_, second := e.call("ask_cline", map[string]any{"prompt": probe, "sessionId": id})
	wantOK(t, second)
	if got := readTrimmed(filepath.Join(data, "host2")); got != host1 {
		t.Errorf("turn 2 ran in pod %q, turn 1 in %q: the pod was not kept", got, host1)
	}
	if got := readTrimmed(filepath.Join(data, "seen")); got != "planted" {
		t.Errorf("turn 2 did not see the file turn 1 planted in its pod (%q)", got)
	}
	if enf, _ := second["enforcement"].(map[string]any); enf == nil || enf["container"] == nil {
		t.Errorf("the kept pod's turn reports no container: %v", second["enforcement"])
	}
	_, third := e.call("ask_cline", map[string]any{"prompt": "fake:history", "sessionId": id})
	wantOK(t, third)
	if got, _ := third["text"].(string); !strings.HasPrefix(got, "earlier=2 first=remember this") || third["turn"] != float64(3) {
		t.Errorf("turn 3 did not see the earlier turns: %q turn %v", got, third["turn"])
	}

	// Another session: a pod of its own, which has nothing of the first one's.
	_, other := e.call("ask_cline", map[string]any{"prompt": probe})
	wantOK(t, other)
	otherData := sessionData(t, sessions, other["sessionId"].(string))
	if got := readTrimmed(filepath.Join(otherData, "host2")); got == "" || got == host1 {
		t.Errorf("another session ran in pod %q (the first session's: %q)", got, host1)
	}
	if _, err := os.Stat(filepath.Join(otherData, "seen")); !os.IsNotExist(err) {
		t.Errorf("another session saw the file the first session planted in its pod: %v", err)
	}
	if n := w.pods(); n != 2 {
		t.Errorf("with two live sessions the namespace has %d pods, want two", n)
	}
	_, edit := e.call("ask_cline", map[string]any{"prompt": "fake:edit?path=hello.txt"})
	wantOK(t, edit)
	if _, err := os.Stat(filepath.Join(e.work, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("an analysis edit was written: %v", err)
	}
	if rej, _ := edit["rejectedToolCalls"].([]any); len(rej) != 1 {
		t.Errorf("rejectedToolCalls %v, want the editor call", edit["rejectedToolCalls"])
	}

	// The idle time ends them: no pod; the session goes on in a new pod with its history.
	if !mcpsession.Eventually(90*time.Second, func() bool { return w.pods() == 0 }) {
		t.Fatalf("the idle sessions' pods are still there: %d", w.pods())
	}
	_, fourth := e.call("ask_cline", map[string]any{"prompt": "fake:history", "sessionId": id})
	wantOK(t, fourth)
	if got, _ := fourth["text"].(string); !strings.HasPrefix(got, "earlier=3 first=remember this") {
		t.Errorf("after the idle end the session lost its history: %q", got)
	}
	if n := w.pods(); n != 1 {
		t.Fatalf("after the session's next turn the namespace has %d pods, want its new one kept", n)
	}
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !mcpsession.Eventually(60*time.Second, func() bool { return w.pods() == 0 }) {
		t.Fatalf("the killed server's kept pod is still there")
	}
}
