//go:build e2e && linux

package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// probeReport finds the fake CLI's JSON probe report (a JSON object inside a string field of
// one of its stdout events) that has key.
func probeReport(t *testing.T, stdout, key string) map[string]any {
	t.Helper()
	var find func(v any) map[string]any
	find = func(v any) map[string]any {
		switch v := v.(type) {
		case string:
			var m map[string]any
			if strings.HasPrefix(v, "{") && json.Unmarshal([]byte(v), &m) == nil && m[key] != nil {
				return m
			}
		case map[string]any:
			for _, w := range v {
				if m := find(w); m != nil {
					return m
				}
			}
		}
		return nil
	}
	for _, line := range strings.Split(stdout, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil {
			if m := find(ev); m != nil {
				return m
			}
		}
	}
	t.Fatalf("no probe report with %q in the run's stdout:\n%s", key, stdout)
	return nil
}

// runProbe runs the fake CLI with prompt in a pod without mounts (HOME and /tmp in memory).
func runProbe(t *testing.T, e *Executor, prompt string) (sandbox.Exit, string, string) {
	t.Helper()
	spec, out, errb := fakeSpec("/tmp", prompt)
	spec.Mounts, spec.Dir, spec.Args = nil, "/tmp", []string{"--json", "-y", prompt}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	x, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatalf("run %q: %v\n%s", prompt, err, errb)
	}
	return x, out.String(), errb.String()
}

// TestHardeningFromInside: what the CLI can do in its pod — it runs as the configured uid with
// no capabilities at all, no new privileges and a seccomp filter; mknod, setuid(0), chown to
// root and raw sockets fail; the root file system is read-only while HOME and /tmp (memory
// emptyDirs) are writable.
func TestHardeningFromInside(t *testing.T) {
	e := clusterExecutor(t)
	_, out, _ := runProbe(t, e, "Probe fake:probe_caps")
	caps := probeReport(t, out, "mknod_null")
	status, _ := caps["status"].(map[string]any)
	if caps["uid"] != 1000.0 || status["CapEff"] != "0000000000000000" || status["CapBnd"] != "0000000000000000" ||
		status["NoNewPrivs"] != "1" || status["Seccomp"] != "2" {
		t.Errorf("got %v, want uid 1000, no capabilities, no new privileges, a seccomp filter", caps)
	}
	for _, k := range []string{"mknod_null", "setuid_0", "chown_root", "raw_socket"} {
		if caps[k] == "ok" {
			t.Errorf("%s succeeded in the pod", k)
		}
	}
	_, out, _ = runProbe(t, e, "Probe fake:probe_write")
	w := probeReport(t, out, "root")
	for k, want := range map[string]bool{"root": false, "etc": false, "home": true, "tmp": true} {
		r, _ := w[k].(map[string]any)
		if got := r["result"] == "ok"; got != want {
			t.Errorf("writing in %s: got %v, want writable %v", k, r, want)
		}
	}
}

// TestExitAndStderr: a CLI that fails exits 1 through the pod's status, and what it wrote to
// stderr arrives on stderr, apart from stdout.
func TestExitAndStderr(t *testing.T) {
	e := clusterExecutor(t)
	x, out, errs := runProbe(t, e, "Hi fake:conn_refused")
	if x.Code != 1 || x.Stopped || x.Signal != "" {
		t.Errorf("got %+v, want exit 1", x)
	}
	const errLine = `"type":"error","message":"Cannot connect`
	if !strings.Contains(errs, errLine) || strings.Contains(out, errLine) || !strings.Contains(out, `"type":"run_result"`) || strings.Contains(errs, "run_result") {
		t.Errorf("got stdout %q, stderr %q; want the result on stdout and the error line on stderr", out, errs)
	}
}

// TestCancelStopsTheCLIWithSIGINT: a cancelled run ends as fast as the CLI handles SIGINT, not
// after the stop grace: the fake CLI ignores its first SIGTERM but exits on SIGINT, and the
// helper turns the kubelet's SIGTERM into SIGINT. The pod is gone when Run returns.
func TestCancelStopsTheCLIWithSIGINT(t *testing.T) {
	e := clusterExecutor(t)
	spec, _, _ := fakeSpec("/tmp", "Wait fake:hang")
	spec.Mounts, spec.Dir, spec.Args = nil, "/tmp", []string{"--json", "-y", "Wait fake:hang"}
	spec.StopGrace = 40 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		x   sandbox.Exit
		err error
	}
	done := make(chan result, 1)
	go func() { x, err := e.Run(ctx, spec); done <- result{x, err} }()
	name := ""
	for i := 0; i < 600 && name == ""; i++ {
		list, _ := e.cs.CoreV1().Pods(e.cfg.Namespace).List(context.Background(), metav1.ListOptions{})
		if list != nil && len(list.Items) == 1 && started(&list.Items[0], mainName) {
			name = list.Items[0].Name
		}
		time.Sleep(100 * time.Millisecond)
	}
	if name == "" {
		t.Fatal("the run's pod never started")
	}
	cancel()
	stop := time.Now()
	r := <-done
	took := time.Since(stop)
	t.Logf("cancel to pod gone: %v", took)
	if r.err != nil || !r.x.Stopped {
		t.Errorf("got %+v, %v; want Stopped", r.x, r.err)
	}
	if took > 20*time.Second {
		t.Errorf("the cancelled run took %v (stop grace %v): the CLI did not get SIGINT", took, spec.StopGrace)
	}
	if _, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod is still there: %v", err)
	}
}

// TestMissingCLI: an image without the CLI at the spec's path is a LaunchError (Missing) naming
// it, as Docker's check of the path before the start, and no pod stays.
func TestMissingCLI(t *testing.T) {
	e := clusterExecutor(t)
	spec, _, _ := fakeSpec("/tmp", "hi")
	spec.Mounts, spec.Dir, spec.Path = nil, "/tmp", "/usr/local/bin/no-cline"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := e.Run(ctx, spec)
	var le *sandbox.LaunchError
	if !errors.As(err, &le) || !le.Missing || !strings.Contains(err.Error(), "/usr/local/bin/no-cline") {
		t.Errorf("got %v, want a LaunchError naming the missing CLI", err)
	}
}
