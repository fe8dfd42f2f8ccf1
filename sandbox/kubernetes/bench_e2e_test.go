//go:build e2e && linux

package kubernetes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// BenchmarkRun is one quick call of the fake CLI with a small checkout, copied in and back, on
// the test cluster: with the checkout alone, and with the checkout, its .git (read-only) and a
// settings copy of which one file comes back, as the apply tool mounts them. ns/op is Run's wall
// time (create the pod and its policy, fill, run, copy back, delete and wait until the pod is
// gone); pod-s is Exit.Duration's median, from the pod's creation to the end of the CLI.
//
//	go test -tags e2e -run '^$' -bench BenchmarkRun -benchtime 10x ./sandbox/kubernetes/
func BenchmarkRun(b *testing.B) {
	e := clusterExecutor(b)
	root := b.TempDir()
	work, data := filepath.Join(root, "repo"), filepath.Join(root, "data")
	for _, name := range []string{"repo/README.md", "repo/src/a.go", "repo/.git/HEAD", "data/settings/providers.json"} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("content of "+name+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []string{work, data} {
		if err := os.Chmod(d, 0o777); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("mounts=%d", n), func(b *testing.B) {
			var durs []time.Duration
			for b.Loop() {
				spec, out, errb := fakeSpec(work, "Hi fake:pong")
				if n == 3 {
					spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: filepath.Join(work, ".git"), Target: filepath.Join(work, ".git"), ReadOnly: true},
						sandbox.Mount{Source: data, Target: data, Return: sandbox.Return{Files: []string{"settings/providers.json"}}})
				}
				x, err := e.Run(context.Background(), spec)
				if err != nil || x.Code != 0 {
					b.Fatalf("run: %+v %v\n%s\n%s", x, err, out, errb)
				}
				durs = append(durs, x.Duration)
			}
			slices.Sort(durs)
			b.ReportMetric(durs[len(durs)/2].Seconds(), "pod-s")
		})
	}
}

// BenchmarkWarmVsCold is one cold and one warm call per iteration of the fake CLI with a small
// checkout (copied in and back), on the test cluster: the cold call creates its pod and policy
// and returns once the pod is gone; the warm call takes a started pod (the pool is refilled
// between iterations, outside the timings) and leaves its deletion to the background. The
// metrics are the calls' wall times, p50 and p95 over the iterations.
//
//	go test -tags e2e -run '^$' -bench BenchmarkWarmVsCold -benchtime 20x ./sandbox/kubernetes/
func BenchmarkWarmVsCold(b *testing.B) {
	e := warmExecutor(b, 1)
	cold := *e
	cold.warm = nil
	work := b.TempDir()
	for _, name := range []string{"README.md", "src/a.go"} {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("content of "+name+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.Chmod(work, 0o777); err != nil {
		b.Fatal(err)
	}
	call := func(e *Executor) time.Duration {
		spec, out, errb := fakeSpec(work, "Hi fake:pong")
		start := time.Now()
		x, err := e.Run(context.Background(), spec)
		if err != nil || x.Code != 0 {
			b.Fatalf("run: %+v %v\n%s\n%s", x, err, out, errb)
		}
		return time.Since(start)
	}
	call(e) // the layout's first call: cold, makes the pool
	var colds, warms []time.Duration
	for b.Loop() {
		b.StopTimer()
		waitIdle(b, e, 1)
		b.StartTimer()
		warms = append(warms, call(e))
		colds = append(colds, call(&cold))
	}
	if w, _ := e.WarmStats(); int(w) != len(warms) {
		b.Fatalf("%d of %d calls were warm", w, len(warms))
	}
	for name, ds := range map[string][]time.Duration{"cold": colds, "warm": warms} {
		slices.Sort(ds)
		b.ReportMetric(ds[len(ds)/2].Seconds(), name+"-p50-s")
		b.ReportMetric(ds[min(len(ds)-1, len(ds)*95/100)].Seconds(), name+"-p95-s")
	}
}
