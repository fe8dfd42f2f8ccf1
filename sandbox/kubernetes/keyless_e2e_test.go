//go:build e2e && linux

package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/internal/testcluster"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// keylessWorld is a fake provider pod (in a namespace of its own: its log prints the key it
// received) and a run's data dir whose providers.json names baseURL with apiKey.
type keylessWorld struct {
	e        *Executor
	ip       string // the provider pod's address
	provider *corev1.Pod
	key      string
}

func newKeylessWorld(t *testing.T) keylessWorld {
	t.Helper()
	e := clusterExecutor(t)
	testcluster.Start(t).RequireNetworkPolicy(t)
	ctx := context.Background()
	ns, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cline-mcp-provider-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	pe := *e
	pe.cfg.Namespace = ns.Name
	p, err := pe.cs.CoreV1().Pods(ns.Name).Create(ctx, pe.probePod(randomID(), "provider", []string{"/usr/local/bin/cline", "__fake_cline_serve", ":18080"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if p, err = pe.waitFor(wctx, p.Name, func(p *corev1.Pod) bool { return started(p, probeContainer) && p.Status.PodIP != "" }); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return keylessWorld{e: e, ip: p.Status.PodIP, provider: p, key: "sk-real-" + hex.EncodeToString(b)}
}

// spec is a fake CLI run of prompt whose settings copy names baseURL and apiKey (the bridge's
// key-less copy: the forwarder and a placeholder; or the key itself), with cred.
func (w keylessWorld) spec(t *testing.T, baseURL, apiKey, prompt string, cred *sandbox.Credential) (sandbox.Spec, *bytes.Buffer) {
	t.Helper()
	work, data := t.TempDir(), t.TempDir()
	doc := map[string]any{"version": 1, "lastUsedProvider": "openai-compatible", "providers": map[string]any{
		"openai-compatible": map[string]any{"settings": map[string]any{"provider": "openai-compatible", "model": "m", "baseUrl": baseURL, "apiKey": apiKey}}}}
	b, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(data, "settings"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "settings", "providers.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(work, 0o777)
	_ = os.Chmod(data, 0o777)
	spec, out, _ := fakeSpec(work, prompt)
	spec.Args = []string{"--json", "-y", "-c", work, "--data-dir", "/data", "-P", "openai-compatible", prompt}
	spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: data, Target: "/data"})
	spec.Credential = cred
	return spec, out
}

// credential is what the bridge hands the executor for the fake provider: its origin, the key's
// header and the one endpoint call_provider uses.
func (w keylessWorld) credential() *sandbox.Credential {
	return &sandbox.Credential{Upstream: "http://" + w.ip + ":18080", BasePath: "/v1", Endpoints: []string{"POST /echo"},
		Headers: map[string]string{"Authorization": "Bearer " + w.key}}
}

func (w keylessWorld) masked() string {
	b := []byte(w.key)
	for i := range b {
		b[i] ^= 0xff
	}
	return hex.EncodeToString(b)
}

func (w keylessWorld) providerLog(t *testing.T) string {
	b, err := w.e.cs.CoreV1().Pods(w.provider.Namespace).GetLogs(w.provider.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// callReport is the call_provider scenario's report from the run's JSON stream.
func callReport(t *testing.T, stdout string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		text, _ := ev["text"].(string)
		var rep map[string]any
		if json.Unmarshal([]byte(text), &rep) == nil && rep["needle_found"] != nil {
			return rep
		}
	}
	t.Fatalf("no call_provider report in %s", stdout)
	return nil
}

// TestKeylessPod: a run with a credential never has the key: the CLI's settings copy names the
// sidecar's forwarder on the pod's loopback and a placeholder, a hostile CLI that searches the
// container for the key (its environment, every process's environ and cmdline it can see, the
// files under its data dir, HOME and /tmp) finds nothing, and yet the provider — reached only
// through the run's NetworkPolicy, which the executor opened for its address — receives the real
// key, alone. The marker: the same search in a run that holds the key finds it in the settings
// copy. The report says the credential stayed outside and what the stored policy allows.
func TestKeylessPod(t *testing.T) {
	w := newKeylessWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	prompt := "Call fake:call_provider?extra_auth=sk-attacker-other&needle=" + w.masked()
	cred := w.credential()
	spec, out := w.spec(t, "http://"+sandbox.ProviderProxyAddr+"/v1", "sk-cline-mcp-placeholder-0123", prompt, cred)
	// While the pod is still there after the call (its CLI ended: the sidecar has forwarded the
	// request), everything a reader of the namespace can get is searched for the key.
	dumped := make(chan string, 1)
	go func() {
		defer close(dumped)
		for ctx.Err() == nil {
			list, _ := w.e.cs.CoreV1().Pods(w.e.cfg.Namespace).List(ctx, metav1.ListOptions{})
			if list != nil && len(list.Items) == 1 && terminated(&list.Items[0], mainName) != nil {
				if d, err := namespaceDump(w.e, w.e.cfg.Namespace); err == nil {
					dumped <- d
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	x, err := w.e.Run(ctx, spec)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	switch d, ok := <-dumped; {
	case !ok:
		t.Error("the namespace was never searched while the ended run's pod was there")
	case strings.Contains(d, w.key):
		t.Error("after the call, the key is readable in the run's namespace")
	case !strings.Contains(d, "fake provider ok"):
		t.Error("the search did not read the run's log (the provider's answer is in it)")
	}
	rep := callReport(t, out.String())
	if rep["status"] != float64(200) || rep["head"] != "fake provider ok /v1/echo" {
		t.Errorf("the provider was not reached through the sidecar: %v", rep)
	}
	if found, _ := rep["needle_found"].([]any); len(found) != 0 {
		t.Errorf("the key was inside the run's container at %v", found)
	}
	if log := w.providerLog(t); !strings.Contains(log, fmt.Sprintf(`authorization=["Bearer %s"]`, w.key)) {
		t.Errorf("the provider did not get the real key alone; it logged:\n%s", log)
	}
	c := x.Container
	if c == nil || !c.CredentialOutside || c.Egress != sandbox.EgressPolicy || !slices.Contains(c.Allowed, w.ip+"/32:18080/TCP") || c.ImageID == "" {
		t.Errorf("report %+v: want the credential outside, the provider's address allowed and the image's id", c)
	}
	keyless := x.Duration
	if x.Egress == nil || x.Egress.Answers != 1 || len(x.Egress.Refused) != 0 {
		t.Errorf("the sidecar's count %+v, want the one answer", x.Egress)
	}

	// The marker: the key inside (no credential: the settings hold it, the policy admits the
	// provider) is found by the same search.
	in := *w.e
	in.cfg.EgressAllow = []string{w.ip + ":18080"}
	spec, out = w.spec(t, "http://"+w.ip+":18080/v1", w.key, prompt, nil)
	x, err = in.Run(ctx, spec)
	if err != nil {
		t.Fatalf("run with the key inside: %v", err)
	}
	rep = callReport(t, out.String())
	if found, _ := rep["needle_found"].([]any); !strings.Contains(fmt.Sprint(found), "providers.json") || rep["status"] != float64(200) {
		t.Errorf("the key inside: the search found %v (status %v), want the settings copy", found, rep["status"])
	}
	if x.Container == nil || x.Container.CredentialOutside {
		t.Errorf("the key inside: report %+v", x.Container)
	}
	t.Logf("a run with the key outside took %v, with it inside %v (one each: not a benchmark)", keyless.Round(time.Millisecond), x.Duration.Round(time.Millisecond))
}

// TestKeylessPodAsStored: while a run with a credential runs, its pod as the API server stored
// it is Guaranteed (every container bounded), the sidecar runs as a uid of its own, and the key
// is in nothing a reader of the namespace can get — pods, every container's log, events,
// configmaps, secrets — while the search finds a marker the run's environment carries (so it
// read the pod). The run's report is the stored policy's allow-list and the main container's
// imageID from the pod's status.
func TestKeylessPodAsStored(t *testing.T) {
	w := newKeylessWorld(t)
	e := w.e
	marker := "marker-" + randomID()
	cred := w.credential()
	spec, _ := w.spec(t, "http://"+sandbox.ProviderProxyAddr+"/v1", "sk-cline-mcp-placeholder-0123", "Wait fake:hang", cred)
	spec.Env = append(spec.Env, "RUN_MARKER="+marker)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan sandbox.Exit, 1)
	go func() {
		x, err := e.Run(ctx, spec)
		if err != nil {
			t.Errorf("run: %v", err)
		}
		done <- x
	}()
	var pod *corev1.Pod
	for i := 0; i < 600 && pod == nil; i++ {
		list, _ := e.cs.CoreV1().Pods(e.cfg.Namespace).List(context.Background(), metav1.ListOptions{})
		if list != nil && len(list.Items) == 1 && started(&list.Items[0], mainName) {
			pod = &list.Items[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	if pod == nil {
		cancel()
		t.Fatal("the run's pod never started")
	}
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("stored pod's QoS class %q, want Guaranteed", pod.Status.QOSClass)
	}
	if sc := pod.Spec.InitContainers[0]; sc.Name != sidecarName || *sc.SecurityContext.RunAsUser == *pod.Spec.SecurityContext.RunAsUser ||
		(pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace) {
		t.Errorf("sidecar %s as %d, run as %d, shared process namespace %v", sc.Name, *sc.SecurityContext.RunAsUser, *pod.Spec.SecurityContext.RunAsUser, pod.Spec.ShareProcessNamespace)
	}
	pol, err := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen, err := namespaceDump(e, e.cfg.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(seen, w.key) {
		t.Errorf("the key is readable in namespace %s", e.cfg.Namespace)
	}
	if !strings.Contains(seen, marker) {
		t.Error("the namespace search did not find the run's marker: it did not read the pod")
	}
	cancel()
	var x sandbox.Exit
	select {
	case x = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the cancelled run did not return")
	}
	c := x.Container
	if c == nil || !slices.Equal(c.Allowed, policyAllows(pol)) || !slices.Contains(c.Allowed, w.ip+"/32:18080/TCP") ||
		!strings.Contains(c.Network, "ingress denied") || c.ImageID == "" || !c.CredentialOutside {
		t.Errorf("report %+v; the stored policy allows %v", c, policyAllows(pol))
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == mainName && (c == nil || st.ImageID != c.ImageID) {
			t.Errorf("report's image id %v, the pod's %q", c, st.ImageID)
		}
	}
}

// namespaceDump is everything a reader of ns can get (pods, every container's log, events,
// configmaps, secrets), as text.
func namespaceDump(e *Executor, ns string) (string, error) {
	ctx := context.Background()
	var all strings.Builder
	pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		b, _ := json.Marshal(p)
		all.Write(b)
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			r, err := e.cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name}).Stream(ctx)
			if err != nil {
				continue // a container that has not started has no log yet
			}
			_, _ = io.Copy(&all, r)
			r.Close()
		}
	}
	for _, list := range []func() (any, error){
		func() (any, error) { return e.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return e.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return e.cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{}) },
	} {
		v, err := list()
		if err != nil {
			return "", err
		}
		b, _ := json.Marshal(v)
		all.Write(b)
	}
	return all.String(), nil
}
