//go:build e2e && linux

package deploy

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/cline-mcp/cline-mcp/bridge/service"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/testcluster"
)

// Scale: tenants × perTenant remote reviews at once.
const (
	scaleTenants   = 5
	scalePerTenant = 4
)

// TestDeployScale measures the service on the test cluster under 20 concurrent remote reviews
// from 5 tenants (the fake CLI; each review's repository sent as a bundle, so the service pod
// needs git: it runs the service's own image, deploy/image). Each tenant may run 2 reviews and
// queue 1, so its fourth call is refused rate_limited and retried after retryAfterSeconds. It
// reports throughput, p50/p95 time to verdict, the refusals, the run pods' start and how many
// ran at once, and the API server's requests during the load by verb and resource; it checks
// that every review got its verdict, the refusals happened, and no run pod, policy, checkout or
// bundle is left.
// It takes minutes, so it runs only when asked:
//
//	CLINE_MCP_SCALE=1 go test -count=1 -tags e2e -run '^TestDeployScale$' -v -timeout 30m ./deploy/
func TestDeployScale(t *testing.T) {
	if os.Getenv("CLINE_MCP_SCALE") == "" {
		t.Skip("the scale measurement runs only with CLINE_MCP_SCALE=1 (docs/scale.md)")
	}
	buildE2EImage(t)
	buildServiceImage(t)
	c := testcluster.Start(t)
	c.ImportDockerImage(t, e2eImage)
	c.ImportDockerImage(t, serviceImage)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	m := load(t)
	adapt(m)
	tokens := scaleAdapt(m)
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
		t.Fatalf("the service pod never became ready\nservice:\n%s", w.serviceLog())
	}
	spec, _ := json.Marshal(map[string]any{"tokens": tokens, "perToken": scalePerTenant, "tool": "review_cline", "args": reviewArgs(t)})
	url := "http://127.0.0.1:" + itoa(e2ePort) + "/mcp"

	ctx, stop := context.WithCancel(context.Background())
	pods := watchRunPods(ctx, t, cs)
	cpuBefore, _ := serviceUsage(t, c, cs, w.servicePod())
	before := apiRequests(t, cs)
	phase, out := waitPodEnd(t, w, w.caller(t, "load", url, string(spec)), 12*time.Minute)
	after := apiRequests(t, cs)
	cpuAfter, peakRSS := serviceUsage(t, c, cs, w.servicePod())
	if phase != corev1.PodSucceeded {
		t.Fatalf("the load caller: %s %s\nservice:\n%s", phase, out, w.serviceLog())
	}
	ms, wall, refusals := loadOutcome(t, out)
	wantNoLeftovers(t, w, c)
	stop()
	runs, starts, most := pods.summary()
	t.Logf("%d reviews from %d tenants in %.1f s: %.2f verdicts/s; time to verdict p50 %.1f s, p95 %.1f s, max %.1f s; %d rate_limited refusals (retried)",
		len(ms), scaleTenants, wall, float64(len(ms))/wall,
		pct(ms, 50), pct(ms, 95), float64(ms[len(ms)-1])/1000, refusals)
	t.Logf("%d run pods, at most %d at once; from creation to running p50 %.1f s, p95 %.1f s", runs, most, pct(starts, 50), pct(starts, 95))
	t.Logf("the service process (and the git it ran): %.1f CPU seconds for the %d reviews, %.2f a review; peak RSS %d MiB",
		cpuAfter-cpuBefore, len(ms), (cpuAfter-cpuBefore)/float64(len(ms)), peakRSS>>10)
	t.Logf("API server requests during the load, per review (all clients: the service, the kubelet, the scheduler, controllers, and this test's one caller pod and two watches):\n%s", diffRequests(before, after, len(ms)))
}

// loadOutcome reads mcpcall load's answer: every call's time to verdict (sorted, ms), the wall
// time (s) and the refusals; a call without a verdict, or no refusal at all, fails the test.
func loadOutcome(t *testing.T, out string) (ms []int64, wall float64, refusals int) {
	t.Helper()
	var res struct {
		Calls []struct {
			Tenant, Refusals int
			OK               bool
			Kind, Error      string
			MS               int64
		}
		WallMS int64
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Calls) != scaleTenants*scalePerTenant {
		t.Fatalf("the load caller's answer: %v %s", err, out)
	}
	for _, call := range res.Calls {
		refusals += call.Refusals
		ms = append(ms, call.MS)
		if !call.OK || call.Error != "" {
			t.Errorf("tenant %d: no verdict: kind %q error %q", call.Tenant, call.Kind, call.Error)
		}
	}
	slices.Sort(ms)
	if refusals < 1 {
		t.Errorf("no call was refused rate_limited: the tenants' limits were never reached")
	}
	return ms, float64(res.WallMS) / 1000, refusals
}

// wantNoLeftovers: no run pod or run policy is left, and in the service pod every tenant's
// repository cache exists (the path is right) and holds no checkout or bundle.
func wantNoLeftovers(t *testing.T, w *world, c *testcluster.Cluster) {
	t.Helper()
	if !mcpsession.Eventually(2*time.Minute, func() bool { return w.runPods() == 0 }) {
		t.Errorf("%d run pod(s) left after the load", w.runPods())
	}
	pols, _ := w.cs.NetworkingV1().NetworkPolicies(runsNS).List(context.Background(), metav1.ListOptions{})
	if pols == nil || len(pols.Items) != 1 {
		t.Errorf("policies left in %s: %v", runsNS, pols)
	}
	script := `cd /var/lib/cline-mcp/jobs/service-repos && ls -d */ | wc -l && ls -d */checkouts/* */bundles/* 2>/dev/null | wc -l`
	if got := strings.Fields(execIn(t, c, w.cs, w.servicePod(), "sh", "-c", script)); len(got) != 2 || got[0] != itoa(scaleTenants) || got[1] != "0" {
		t.Errorf("the service's repository cache: %q, want %d tenants and 0 checkouts or bundles left", got, scaleTenants)
	}
}

// scaleAdapt gives the adapted base five tenants (2 runs, 1 queued each), the service's own
// image, room for their ten runs, and small run pods; it returns the tenants' tokens.
func scaleAdapt(m *manifests) []string {
	var tokens, entries []string
	for i := range scaleTenants {
		tok := fmt.Sprintf("scale-token-%d", i)
		tokens = append(tokens, tok)
		entries = append(entries, fmt.Sprintf(`{"name": "t%d", "root": %q, "tokenSha256": [%q], "maxConcurrent": 2, "maxQueued": 1, "maxJobs": 0}`,
			i, workDir, service.Hash(tok)))
	}
	m.secrets["cline-mcp-tokens"].StringData["tokens.json"] = `{"tenants": [` + strings.Join(entries, ",") + `]}`
	c := &m.deployments[0].Spec.Template.Spec.Containers[0]
	c.Image = serviceImage
	for i, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--k8s-cpu="):
			c.Args[i] = "--k8s-cpu=100m"
		case strings.HasPrefix(a, "--k8s-memory="):
			c.Args[i] = "--k8s-memory=128Mi"
		}
	}
	c.Args = append(c.Args, "--max-concurrent=10")
	return tokens
}

// reviewArgs is a review_cline of a small repository sent as a bundle, which the fake CLI
// answers with one finding.
func reviewArgs(t *testing.T) map[string]any {
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "app.go"), []byte("package main\n\nfunc main() { _ = 1 / 1 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "one")
	commit := git("rev-parse", "HEAD")
	git("bundle", "create", "b.bundle", "main")
	raw, err := os.ReadFile(filepath.Join(dir, "b.bundle"))
	if err != nil {
		t.Fatal(err)
	}
	block := `{"summary": "s", "findings": [{"severity": "low", "file": "app.go", "line": 3, "title": "t", "detail": "d"}]}`
	return map[string]any{"repository": map[string]any{"bundle": base64.StdEncoding.EncodeToString(raw), "commit": commit},
		"target": "commit:" + commit, "prompt": "fake:pong?text=" + url.QueryEscape("Looks fine.\n\n```json\n"+block+"\n```")}
}

// podWatch records, for each run pod, when the watch saw it created and first running (or
// ended, when it never showed running), and how many existed at once.
type podWatch struct {
	mu      sync.Mutex
	added   map[string]time.Time
	started map[string]time.Duration
	now     int
	most    int
}

func watchRunPods(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) *podWatch {
	pw := &podWatch{added: map[string]time.Time{}, started: map[string]time.Duration{}}
	opened := make(chan error, 1)
	go func() {
		for first := true; ctx.Err() == nil; first = false {
			wi, err := cs.CoreV1().Pods(runsNS).Watch(ctx, metav1.ListOptions{})
			if first {
				opened <- err
			}
			if err != nil {
				return
			}
			for ev := range wi.ResultChan() {
				pw.see(ev)
			}
			wi.Stop()
		}
	}()
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	return pw
}

func (pw *podWatch) see(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	_, known := pw.added[p.Name]
	switch {
	case ev.Type == watch.Deleted:
		if known {
			pw.now--
		}
	case !known:
		pw.added[p.Name] = time.Now()
		pw.now++
		pw.most = max(pw.most, pw.now)
	}
	_, seen := pw.started[p.Name]
	if at, ok := pw.added[p.Name]; ok && !seen && p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
		pw.started[p.Name] = time.Since(at)
	}
}

// serviceUsage reads the service's process (PID 1 of its container): the CPU seconds it and its
// waited-for children (git) used so far, and its peak resident set in KiB.
func serviceUsage(t *testing.T, c *testcluster.Cluster, cs *kubernetes.Clientset, pod *corev1.Pod) (cpu float64, peakKiB int) {
	out := execIn(t, c, cs, pod, "sh", "-c", "cat /proc/1/stat; grep VmHWM /proc/1/status")
	line, status, _ := strings.Cut(out, "\n")
	// The fields after the command's closing parenthesis: utime, stime, cutime, cstime are the
	// 12th to 15th of them, in clock ticks (100 a second on Linux).
	_, rest, _ := strings.Cut(line, ") ")
	f := strings.Fields(rest)
	if len(f) < 15 {
		t.Fatalf("/proc/1/stat of the service: %q", out)
	}
	for _, v := range f[11:15] {
		var n float64
		fmt.Sscan(v, &n)
		cpu += n / 100
	}
	fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(status), "VmHWM:")), "%d", &peakKiB)
	return cpu, peakKiB
}

// execIn runs argv in the service pod's container and returns its output.
func execIn(t *testing.T, c *testcluster.Cluster, cs *kubernetes.Clientset, pod *corev1.Pod, argv ...string) string {
	t.Helper()
	if pod == nil {
		t.Fatal("no service pod to look into")
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.RESTConfig(), "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if err := ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil {
		t.Fatalf("exec %v in %s: %v %s", argv, pod.Name, err, errOut.String())
	}
	return out.String()
}

// waitPodEnd waits, with one watch (no polling, which would count in the API server's
// requests), for the caller pod name to end, and returns its phase and log.
func waitPodEnd(t *testing.T, w *world, name string, within time.Duration) (corev1.PodPhase, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	wi, err := w.cs.CoreV1().Pods(w.runners).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	var phase corev1.PodPhase
	for ev := range wi.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok {
			phase = p.Status.Phase
		}
		if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			b, _ := w.cs.CoreV1().Pods(w.runners).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
			return phase, string(b)
		}
	}
	t.Fatalf("caller %s did not end (phase %q)\nservice:\n%s", name, phase, w.serviceLog())
	return "", ""
}

func (pw *podWatch) summary() (runs int, startMS []int64, most int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	for _, d := range pw.started {
		startMS = append(startMS, d.Milliseconds())
	}
	slices.Sort(startMS)
	return len(pw.added), startMS, pw.most
}

// pct is the p-th percentile of sorted milliseconds, in seconds.
func pct(sorted []int64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[(len(sorted)-1)*p/100]) / 1000
}

var requestLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} (\d+)$`)
var label = regexp.MustCompile(`(\w+)="([^"]*)"`)

// apiRequests reads the API server's request counters, summed by verb, resource and subresource.
func apiRequests(t *testing.T, cs *kubernetes.Clientset) map[string]int {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the API server's metrics: %v", err)
	}
	counts := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		mm := requestLine.FindStringSubmatch(sc.Text())
		if mm == nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range label.FindAllStringSubmatch(mm[1], -1) {
			l[kv[1]] = kv[2]
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		var n int
		fmt.Sscan(mm[2], &n)
		counts[key] += n
	}
	return counts
}

// diffRequests lists what grew between two readings, largest first, with the count per run.
func diffRequests(before, after map[string]int, runs int) string {
	type row struct {
		key string
		n   int
	}
	var rows []row
	total := 0
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			rows = append(rows, row{k, d})
			total += d
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return b.n - a.n })
	var out strings.Builder
	per := func(n int) float64 { return float64(n) / float64(max(1, runs)) }
	for _, r := range rows {
		fmt.Fprintf(&out, "  %-40s %6d  %6.1f per run\n", r.key, r.n, per(r.n))
	}
	fmt.Fprintf(&out, "  %-40s %6d  %6.1f per run", "total", total, per(total))
	return out.String()
}
