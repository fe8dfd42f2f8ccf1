//go:build e2e && linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestKubernetesSparePod: with warm pods (--k8s-warm 1) and the acp protocol, a pod conversation's
// first turn is followed by a spare: a pod of its own with the CLI started and initialized
// before the next conversation's first turn, which then runs in it. Turn 1 plants a file in its
// pod's /tmp (shown to exist by turn 1's own report: the marker); the second conversation runs
// in a pod that existed before its call, not the first session's, without that file, in the
// spare's data dir; a SIGKILLed server's pods (the sessions', the spare's replacement, the warm
// pool's) are removed by its watchdog.
func TestKubernetesSparePod(t *testing.T) {
	w := newK8sWorld(t)
	// --k8s-cpu: the session's, the spare's and the warm pool's pods fit on the node.
	e, sessions := acpPodServer(t, w, "--warm-idle", "60s", "--k8s-warm", "1", "--k8s-cpu", "200m")
	_, first := e.call("ask_cline", map[string]any{"prompt": plant})
	wantOK(t, first)
	id1, _ := first["sessionId"].(string)
	host1 := readTrimmed(filepath.Join(sessionData(t, sessions, id1), "host1"))
	if host1 == "" {
		t.Fatalf("turn 1's data did not come back from its pod: %v", first)
	}
	const ready = "a spare Cline process is ready"
	if !mcpsession.Eventually(120*time.Second, func() bool { return strings.Contains(e.sess.Stderr(), ready) }) {
		t.Fatalf("no spare pod became ready within 120 s; server log:\n%s", mcpsession.Tail(e.sess.Stderr(), 4000))
	}
	start := time.Now()
	_, second := e.call("ask_cline", map[string]any{"prompt": probe})
	wantOK(t, second)
	id2, _ := second["sessionId"].(string)
	data2 := sessionData(t, sessions, id2)
	host2 := readTrimmed(filepath.Join(data2, "host2"))
	if id2 == "" || id2 == id1 || host2 == "" || host2 == host1 {
		t.Fatalf("the second conversation (%q) ran in pod %q; the first (%q) in %q", id2, host2, id1, host1)
	}
	if _, err := os.Stat(filepath.Join(data2, "seen")); !os.IsNotExist(err) {
		t.Errorf("the second conversation saw the file the first planted in its pod: %v", err)
	}
	if !strings.Contains(e.sess.Stderr(), "dataDir="+data2) {
		t.Errorf("the second conversation's data dir %s is not the spare's; server log:\n%s", data2, mcpsession.Tail(e.sess.Stderr(), 4000))
	}
	pod, err := w.cs.CoreV1().Pods(w.ns).Get(context.Background(), host2, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the second conversation's pod %s: %v", host2, err)
	}
	if !pod.CreationTimestamp.Time.Before(start.Add(-time.Second)) { // the timestamp has whole seconds
		t.Errorf("the second conversation's pod was created at %v, its call started at %v: not a spare", pod.CreationTimestamp.Time, start)
	}
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !mcpsession.Eventually(90*time.Second, func() bool { return w.pods() == 0 }) {
		t.Fatalf("the killed server's pods are still there: %d", w.pods())
	}
}

// TestKubernetesSessionMakesRoom: on a node that holds one run pod of this size, a
// conversation's kept pod gives way to a new conversation's first turn, whose pod the cluster
// could not place otherwise (before, that call waited for room until its time ran out), and the
// first conversation goes on in a new pod with its history.
func TestKubernetesSessionMakesRoom(t *testing.T) {
	w := newK8sWorld(t)
	nodes, err := w.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("want the test cluster's one node: %v", err)
	}
	// The main container's share makes a pod (main + keeper) take more than half the node.
	cpu := fmt.Sprintf("%dm", nodes.Items[0].Status.Allocatable.Cpu().MilliValue()*55/100)
	e, _ := acpPodServer(t, w, "--warm-idle", "5m", "--k8s-cpu", cpu)
	_, first := e.call("ask_cline", map[string]any{"prompt": "remember this"})
	wantOK(t, first)
	id1, _ := first["sessionId"].(string)
	if n := w.pods(); n != 1 {
		t.Fatalf("after the first conversation's turn the namespace has %d pods, want its kept one", n)
	}
	_, other := e.call("ask_cline", map[string]any{"prompt": "fake:pong"})
	wantOK(t, other)
	if !strings.Contains(e.sess.Stderr(), "the pods kept for conversations are given up") {
		t.Errorf("the second conversation's pod found room without the kept one giving way (the node not full?)")
	}
	_, again := e.call("ask_cline", map[string]any{"prompt": "fake:history", "sessionId": id1})
	wantOK(t, again)
	if got, _ := again["text"].(string); !strings.HasPrefix(got, "earlier=1 first=remember this") {
		t.Errorf("the first conversation lost its history after its pod gave way: %q", got)
	}
}

// acpPodServer starts a server of the acp protocol on w's cluster, with a git work tree the pods
// may read and a sessions dir of its own (returned), and the extra flags.
func acpPodServer(t *testing.T, w k8sWorld, extra ...string) (*env, string) {
	t.Helper()
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	// The pods run as uid 1000 (the server runs as root here): the checkout must be theirs to read.
	if out, err := exec.Command("chmod", "-R", "a+rwX", e.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	sessions := filepath.Join(e.root, "sessions")
	e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, append(append(w.args(), "--cline-protocol", "acp", "--sessions-dir", sessions), extra...)...)
	return e, sessions
}

// TestKubernetesSessionSettingsComeBack: a pod session's settings come back from where its CLI
// reads and writes them, the data dir's settings/, as a container session's do
// (TestContainerSessionSettingsComeBack): the change the turn made is named in a warning.
func TestKubernetesSessionSettingsComeBack(t *testing.T) {
	w := newK8sWorld(t)
	e, _ := acpPodServer(t, w)
	_, sc := e.call("ask_cline", map[string]any{"prompt": "plant " + plantProviders})
	wantOK(t, sc)
	if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "the run changed lastUsedProvider") {
		t.Errorf("the settings the run wrote were not read back: warnings %s", ws)
	}
}
