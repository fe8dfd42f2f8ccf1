//go:build e2e && linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// k8sProvider starts the fake provider (the fake image's __fake_cline_serve) in a pod of a
// namespace of its own (its log prints the credentials it received) and returns the pod's
// address and a func that reads its log.
// placeholderPrefix starts the run's stand-in key (bridge/run's).
const placeholderPrefix = "sk-cline-mcp-placeholder-"

func k8sProvider(t *testing.T, w k8sWorld) (string, func() string) {
	t.Helper()
	ctx := context.Background()
	ns, err := w.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cline-mcp-e2e-provider-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	no, yes, uid := false, true, int64(65534)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "provider"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, RunAsNonRoot: &yes},
		Containers: []corev1.Container{{Name: "provider", Image: mcpsession.K8sFakeImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"/usr/local/bin/cline", "__fake_cline_serve", ":18080"},
			SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}}
	if _, err := w.cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	if !mcpsession.Eventually(time.Minute, func() bool {
		p, err := w.cs.CoreV1().Pods(ns.Name).Get(ctx, "provider", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			ip = p.Status.PodIP
		}
		return ip != ""
	}) {
		t.Fatal("the fake provider's pod did not run")
	}
	return ip, func() string {
		b, _ := w.cs.CoreV1().Pods(ns.Name).GetLogs("provider", &corev1.PodLogOptions{}).DoRaw(ctx)
		return string(b)
	}
}

// k8sKeylessEnv is a prepared server environment whose openai-compatible provider (key-less:
// the sidecar keeps key) is the fake provider in a pod of its own (k8sProvider), readable by the
// run pods' user.
func k8sKeylessEnv(t *testing.T, w k8sWorld) (e *env, ip string, providerLog func() string, key string) {
	t.Helper()
	ip, providerLog = k8sProvider(t, w)
	e = prepareEnv(t)
	key = secretKey(t)
	writeFile(t, e.providers, keylessProviders("openai-compatible", "http://"+ip+":18080/v1", key))
	// The pods run as uid 1000 (the server runs as root here): the checkout must be theirs to read.
	if out, err := exec.Command("chmod", "-R", "a+rwX", e.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	return e, ip, providerLog, key
}

// TestKubernetesKeyless: a server with --isolation kubernetes keeps the provider's key out of
// the run's pod: the run's settings copy names the egress sidecar's forwarder on the pod's
// loopback and a placeholder, the key search of a hostile CLI (its environment, the environ and
// cmdline of every process it sees, the files under its data dir, HOME and /tmp) finds nothing,
// and the provider — admitted by the run's NetworkPolicy without any --k8s-egress-allow —
// receives the real key alone. The result says the credential stayed outside, lists what the
// stored policy allowed, carries the image's id and no warning of the Docker proxy, and never
// holds the key; neither does the server's log.
func TestKubernetesKeyless(t *testing.T) {
	w := newK8sWorld(t)
	w.c.RequireNetworkPolicy(t)
	e, ip, providerLog, key := k8sKeylessEnv(t, w)
	e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, w.args()...)
	// chat/completions: the API path the sidecar lends the key to.
	_, sc := e.call("ask_cline", map[string]any{"prompt": "Call fake:call_provider?path=chat/completions&extra_auth=sk-attacker-other&needle=" + masked(key)})
	if sc["ok"] != true {
		t.Fatalf("call: %v %v", sc["kind"], sc["message"])
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("report %q: %v", sc["text"], err)
	}
	if rep["status"] != float64(200) || !strings.Contains(fmt.Sprint(rep["head"]), "/v1/chat/completions") {
		t.Errorf("the provider was not reached through the sidecar: %v", rep)
	}
	if rep["base_url"] != "http://127.0.0.1:3129/v1" || rep["api_key_prefix"] != "sk-cline-mcp-placeholder-" {
		t.Errorf("the run's settings: base_url %v key %v..., want the forwarder and a placeholder", rep["base_url"], rep["api_key_prefix"])
	}
	if found, ok := rep["needle_found"].([]any); !ok || len(found) != 0 {
		t.Errorf("the real key was inside the pod at %v", rep["needle_found"])
	}
	if log := providerLog(); !strings.Contains(log, "Bearer "+key) || strings.Contains(log, "sk-attacker-other") || strings.Contains(log, placeholderPrefix) {
		t.Errorf("the provider did not get the real key alone; it logged:\n%s", log)
	}
	enf, ctr := enforcementOf(t, sc)
	allowed, _ := enf["allowedEndpoints"].([]any)
	if enf["credentialOutside"] != true || enf["egress"] != "policy" || !slices.Contains(allowed, any(ip+"/32:18080/TCP")) ||
		!slices.Contains(allowed, any("kube-system/k8s-app=kube-dns:53/UDP")) || ctr == nil || ctr["imageId"] == "" {
		t.Errorf("enforcement %v", enf)
	}
	if ws := fmt.Sprint(sc["warnings"]); strings.Contains(ws, "--egress-allow") || strings.Contains(ws, "egress proxy") {
		t.Errorf("a pod's result carries the Docker proxy's warning: %s", ws)
	}
	if all, _ := json.Marshal(sc); strings.Contains(string(all), key) {
		t.Errorf("the result holds the real key: %s", all)
	}
	if strings.Contains(e.sess.Stderr(), key) {
		t.Error("the server's log holds the real key")
	}
}

// TestKubernetesKeylessSpendLimit: the sidecar of a key-less pod enforces the call's
// maxIterations as the Docker proxy does — of 13 completions a hostile run sends, the provider
// gets 3 (maxIterations 1 + 2) — and the executor brings back what it counted, so the call ends
// budget_exceeded saying so.
func TestKubernetesKeylessSpendLimit(t *testing.T) {
	w := newK8sWorld(t)
	w.c.RequireNetworkPolicy(t)
	e, _, providerLog, _ := k8sKeylessEnv(t, w)
	e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, w.args()...)
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Spend fake:attack_keyless?marker=/tmp/keyless-marker.txt&spend=13&usage=10", "maxIterations": 1})
	wantBudgetExceeded(t, sc, mcpsession.Text(res), "egress proxy refused the run's provider requests 10 times", "3 provider answers", "maxIterations 1 + 2")
	if n := len(upstreamLine.FindAllString(providerLog(), -1)); n != 3 {
		t.Errorf("the provider got %d of the 13 completions, want 3", n)
	}
}

// TestKubernetesLiveSessionKeyless: a key-less conversation keeps its pod too, and between its
// turns the sidecar lends the key to nothing: the CLI process of turn 1, still running in the
// kept pod, calls the provider again after the turn and is refused (its report comes back with
// turn 2's data, the marker that it ran), and turn 2's enforcement names that refusal. Turn 2
// runs in the same pod and reaches the provider with the key again; the provider saw the real key
// once per turn.
func TestKubernetesLiveSessionKeyless(t *testing.T) {
	w := newK8sWorld(t)
	e, _, providerLog, key := k8sKeylessEnv(t, w)
	sessions := filepath.Join(e.root, "sessions")
	e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, append(w.args(), "--cline-protocol", "acp", "--sessions-dir", sessions, "--warm-idle", "60s")...)
	turn := func(n int, args map[string]any) (map[string]any, map[string]any) {
		t.Helper()
		_, sc := e.call("ask_cline", args)
		wantOK(t, sc)
		if enf, _ := enforcementOf(t, sc); enf["credentialOutside"] != true {
			t.Fatalf("turn %d was not key-less, the test would prove nothing: %v", n, enf)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil || rep["status"] != float64(200) {
			t.Fatalf("turn %d: the provider through the sidecar: %q %v", n, sc["text"], err)
		}
		return sc, rep
	}
	call := "fake:call_provider?path=chat/completions&header=Authorization"
	first, rep1 := turn(1, map[string]any{"prompt": call + "&later=300"})
	id, _ := first["sessionId"].(string)
	if n := w.pods(); n != 1 {
		t.Fatalf("after a key-less turn the namespace has %d pods, want turn 1's kept", n)
	}
	time.Sleep(4 * time.Second) // turn 1's process calls the provider again 0.3 s after its turn
	second, rep2 := turn(2, map[string]any{"prompt": call, "sessionId": id})
	if rep2["host"] != rep1["host"] {
		t.Errorf("turn 2 ran in pod %v, not in the session's kept pod %v", rep2["host"], rep1["host"])
	}
	var late map[string]any
	if b, err := os.ReadFile(filepath.Join(sessionData(t, sessions, id), "late.json")); err != nil || json.Unmarshal(b, &late) != nil {
		t.Fatalf("the kept process's request between the turns did not come back with turn 2's data (%v): the test would prove nothing", err)
	}
	if late["status"] != float64(403) || !strings.Contains(mcpsession.Str(late, "head"), "no provider credential is lent") {
		t.Errorf("between the turns the provider request got %v %v, want the sidecar's refusal", late["status"], late["head"])
	}
	enf, _ := enforcementOf(t, second)
	if refused, _ := enf["refusedEndpoints"].([]any); !slices.Contains(refused, any("provider.cline-mcp.invalid:80")) {
		t.Errorf("turn 2's enforcement does not name the refusal between the turns: %v", enf)
	}
	withKey := 0
	for _, m := range upstreamLine.FindAllStringSubmatch(providerLog(), -1) {
		if strings.Contains(m[3]+m[4], key) {
			withKey++
		}
	}
	if withKey != 2 {
		t.Errorf("the provider got the real key in %d requests, want one per turn", withKey)
	}
}
