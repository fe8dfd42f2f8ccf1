//go:build contract && linux

package contract

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sclient "k8s.io/client-go/kubernetes"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/testcluster"
)

// The Kubernetes half: the real CLI's image in run pods of the test cluster
// (internal/testcluster), which runs in a network namespace of its own. The fake provider is
// served in this process on a Unix socket; a relay pod (the relay image, the socket's directory
// mounted from the host) listens on its pod IP, and the run pods reach it there, the one address
// their NetworkPolicy allows (--k8s-egress-allow). Nothing leaves the cluster's namespace.

// k8sImages imports the real CLI's image and the relay's into the node once per suite run.
var k8sImages sync.Once

// k8sWorld is the cluster side of a world: its namespace (deleted when the test ends, with the
// relay pod) and the relay pod's address.
type k8sWorld struct {
	c     *testcluster.Cluster
	cs    *k8sclient.Clientset
	ns    string
	relay string // ip:port of the relay pod
}

// inKubernetes runs the world's server with --isolation kubernetes on the test cluster.
func inKubernetes() worldOpt { return func(c *worldCfg) { c.k8s = true } }

// startK8sWorld starts the cluster (once), a namespace of the test's own and the relay pod in
// front of a fake provider served on a socket in dir.
func startK8sWorld(t *testing.T, dir string, respond fakeprovider.Responder) (*k8sWorld, *fakeprovider.Provider) {
	t.Helper()
	c := testcluster.Start(t)
	k8sImages.Do(func() {
		c.ImportDockerImage(t, dockerSuite.image)
		c.ImportDockerImage(t, dockerSuite.relay)
	})
	cs, err := k8sclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cline-mcp-contract-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &k8sWorld{c: c, cs: cs, ns: ns.Name}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })

	sock := filepath.Join(dir, "provider.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ip := w.startRelay(t, dir, sock)
	w.relay = net.JoinHostPort(ip, fmt.Sprint(relayPort))
	prov := fakeprovider.Serve(ln, "http://"+w.relay+"/v1", respond)
	t.Cleanup(func() { _ = prov.Close() })
	return w, prov
}

// startRelay runs the relay in a pod on the pod network, forwarding to sock (its directory is
// mounted from the node, which is this host), and returns the pod's IP once it runs.
func (w *k8sWorld) startRelay(t *testing.T, dir, sock string) string {
	t.Helper()
	never, dirType := corev1.PullNever, corev1.HostPathDirectory
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "relay"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "relay", Image: dockerSuite.relay, ImagePullPolicy: never,
			Args:         []string{"-listen", fmt.Sprintf(":%d", relayPort), "-to", sock},
			VolumeMounts: []corev1.VolumeMount{{Name: "sock", MountPath: dir}}}},
		Volumes: []corev1.Volume{{Name: "sock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}}}},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := w.cs.CoreV1().Pods(w.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := w.cs.CoreV1().Pods(w.ns).Get(ctx, "relay", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("relay pod: %v\nkubelet:\n%s", err, w.c.LogTail("kubelet", 30))
		}
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			return p.Status.PodIP
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			t.Fatalf("relay pod ended: %v", p.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// args are the server flags of the world: the real image, the relay the only allowed endpoint.
func (w *k8sWorld) args() []string {
	host, port, _ := net.SplitHostPort(w.relay)
	return []string{"--isolation", "kubernetes", "--k8s-kubeconfig", w.c.Kubeconfig, "--k8s-namespace", w.ns,
		"--k8s-image", dockerSuite.image, "--k8s-cpu", "500m", "--k8s-memory", "1Gi", "--k8s-egress-allow", host + "/32:" + port}
}

// runPods are the pods of the world's namespace but the relay.
func (w *k8sWorld) runPods() []string {
	list, err := w.cs.CoreV1().Pods(w.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return []string{"list pods: " + err.Error()}
	}
	var out []string
	for _, p := range list.Items {
		if p.Name != "relay" {
			out = append(out, p.Name)
		}
	}
	return out
}

// TestKubernetesWorkspace: ask_cline_workspace with the real image in a run pod answers from
// HEAD (not the dirty file), through the provider the pod's NetworkPolicy allows, and the pod
// and its policy are gone afterwards.
func TestKubernetesWorkspace(t *testing.T) {
	w := newWorld(t, inCwd(
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(fakeprovider.Call{Name: "read_files", Arguments: map[string]any{"files": []string{filepath.Join(dir, "README.md")}}})
		},
		textTurn("README.md says hello."),
	), inKubernetes())
	if err := os.WriteFile(filepath.Join(w.work, "README.md"), []byte("uncommitted edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, sc := w.call("ask_cline_workspace", map[string]any{"prompt": "What does README.md say?"})
	mcpsession.WantOK(t, res, sc)
	wantKubernetes(t, sc)
	if got := mcpsession.Str(sc, "text"); !strings.Contains(got, "README.md says hello.") {
		t.Errorf("text %q lacks the model's answer", got)
	}
	chats := w.chats(2)
	read := strings.Join(flat(chats[1].Messages()), "\n")
	if !strings.Contains(read, "1 | hello") || strings.Contains(read, "uncommitted edit") {
		t.Errorf("the model read %q; want HEAD's README.md (hello), not the dirty file", mcpsession.Tail(read, 2000))
	}
	if got := chats[0].Header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("the provider got Authorization %q, want the user's key", got)
	}
	pols, _ := w.k8s.cs.NetworkingV1().NetworkPolicies(w.k8s.ns).List(context.Background(), metav1.ListOptions{})
	if pods := w.k8s.runPods(); len(pods) > 0 || pols == nil || len(pols.Items) > 0 {
		t.Errorf("left in the namespace: pods %v, policies %v", pods, pols)
	}
	wantCleanStderr(t, sc)
}

// TestKubernetesApplyEdit: apply_cline_edits with the real image in a run pod: the model's edits
// come back to the checkout as the host-computed diff, and its `git commit` fails on the
// read-only .git, so HEAD does not move.
func TestKubernetesApplyEdit(t *testing.T) {
	w := newWorld(t, editAndCommitScript(), inKubernetes())
	head := strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD"))
	res, sc := w.call("apply_cline_edits", map[string]any{"prompt": "Create hello.txt, update README.md and commit"})
	mcpsession.WantOK(t, res, sc)
	wantKubernetes(t, sc)
	wantEditNoCommit(t, w, sc, head)
	if b, err := os.ReadFile(filepath.Join(w.work, "hello.txt")); err != nil || string(b) != "Hello from the fake model\n" {
		t.Errorf("hello.txt on the host: %q %v", b, err)
	}
	wantCleanStderr(t, sc)
}

// wantKubernetes checks that the call ran in a pod, hardened, under the deny-all policy, with
// the provider's key outside it (the pod's egress sidecar added it).
func wantKubernetes(t *testing.T, sc map[string]any) {
	t.Helper()
	enf, _ := sc["enforcement"].(map[string]any)
	ctr, _ := enf["container"].(map[string]any)
	if sc["isolation"] != "kubernetes" || ctr["engine"] != "kubernetes" || ctr["readOnlyRoot"] != true ||
		fmt.Sprint(ctr["capDrop"]) != "[ALL]" || !strings.Contains(fmt.Sprint(ctr["network"]), "deny-all") {
		t.Errorf("isolation %v, enforcement %v", sc["isolation"], enf)
	}
	// The key stays with the pod's egress sidecar (the provider still gets it: the callers check).
	if enf["credentialOutside"] != true || enf["egress"] != "policy" {
		t.Errorf("enforcement.credentialOutside = %v, egress %v; want the key outside the pod, under its policy", enf["credentialOutside"], enf["egress"])
	}
}

// TestKubernetesBridgeACPConversation: an ACP conversation with the real CLI in run pods (its
// stdin through pods/attach): the follow-up, in a new pod, loads the session the first pod left
// in the session's data dir and sends the first turn again.
func TestKubernetesBridgeACPConversation(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("FIRST"), fakeprovider.Text("SECOND")), inKubernetes(), acpArgs())
	res, first := w.call("ask_cline", map[string]any{"prompt": "Remember the word PLUM-5. Reply FIRST."})
	mcpsession.WantOK(t, res, first)
	id := mcpsession.Str(first, "sessionId")
	res, second := w.call("ask_cline", map[string]any{"prompt": "Which word? Reply SECOND.", "sessionId": id})
	mcpsession.WantOK(t, res, second)
	wantKubernetes(t, second)
	if mcpsession.Str(second, "text") != "SECOND" || mcpsession.Num(second, "turn") != 2 {
		t.Errorf("second turn: %v", second)
	}
	if chats := w.chats(2); !strings.Contains(string(chats[1].Raw), "PLUM-5") {
		t.Errorf("the follow-up's request to the provider lacks the first turn")
	}
}
