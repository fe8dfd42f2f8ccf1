package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// poolBenchFiles is the size of the pool benchmark's repository (a monorepo-sized
// checkout, where creating a worktree costs seconds).
const poolBenchFiles = 50_000

// big is the pool benchmark's repository, generated once per test binary in testHome: commit A
// with poolBenchFiles files in 500 directories, and commit B that changes 100 of them.
var big struct {
	once       sync.Once
	repo, a, b string
	err        error
}

func bigRepo(tb testing.TB) (repo, commitA, commitB string) {
	tb.Helper()
	big.once.Do(func() {
		dir := filepath.Join(testHome, "big-repo")
		start := time.Now()
		for i := range poolBenchFiles {
			p := filepath.Join(dir, fmt.Sprintf("d%03d", i%500), "f"+strconv.Itoa(i)+".txt")
			if i < 500 {
				if big.err = os.MkdirAll(filepath.Dir(p), 0o755); big.err != nil {
					return
				}
			}
			if big.err = os.WriteFile(p, fmt.Appendf(nil, "file %d\nsome small content\n", i), 0o644); big.err != nil {
				return
			}
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "A"}} {
			if out, err := gitRaw(dir, args...); err != nil {
				big.err = fmt.Errorf("git %v: %v\n%s", args, err, out)
				return
			}
		}
		for i := range 100 {
			p := filepath.Join(dir, fmt.Sprintf("d%03d", i*5), "f"+strconv.Itoa(i*5)+".txt")
			if big.err = os.WriteFile(p, []byte("changed in B\n"), 0o644); big.err != nil {
				return
			}
		}
		if out, err := gitRaw(dir, "commit", "-q", "-a", "-m", "B"); err != nil {
			big.err = fmt.Errorf("git commit: %v\n%s", err, out)
			return
		}
		a, _ := gitRaw(dir, "rev-parse", "HEAD~1")
		b, _ := gitRaw(dir, "rev-parse", "HEAD")
		big.repo, big.a, big.b = dir, strings.TrimSpace(a), strings.TrimSpace(b)
		fmt.Fprintf(os.Stderr, "generated a %d-file repository in %.1f s\n", poolBenchFiles, time.Since(start).Seconds())
	})
	if big.err != nil {
		tb.Fatal(big.err)
	}
	return big.repo, big.a, big.b
}

// BenchmarkPool measures ask_cline_workspace's worktree work with the pool on a generated
// 50,000-file repository. Every iteration runs three units in a rotating order, so machine noise
// hits them alike, and each unit ends by deleting a checkout, so each starts after the same
// kind of disk work:
//   - raw: `git worktree add --detach` + `git worktree remove --force`;
//   - today: Add + Remove (the worktree work of a call without the pool);
//   - pool: Acquire + Release with an empty pool (cold: the worktree is created, then kept;
//     cold-setup is its Acquire alone, what a call waits for before Cline starts, against
//     today's Add), then HEAD moves by a commit that changes 100 files (change100: Acquire +
//     Release), then warm: Acquire + Release at the same HEAD; the pooled worktree is removed
//     outside the timing.
//
// It reports the medians and the ratios warm/raw (goal ≤ 0.15), change100/raw (≤ 0.25),
// cold/today and cold-setup/add (≤ 1.05).
func BenchmarkPool(b *testing.B) {
	repo, commitA, commitB := bigRepo(b)
	ctx := b.Context()
	rawDir := b.TempDir()
	m := &Manager{Root: filepath.Join(b.TempDir(), "root"), Instance: "bench", PoolSize: 1}
	today := &Manager{Root: m.Root, Instance: "today"}
	setHead := func(commit string) { gitT(b, repo, "update-ref", "--no-deref", "HEAD", commit) }
	b.Cleanup(func() {
		m.Close(context.Background())
		setHead(commitB)
	})
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	t := map[string][]time.Duration{}
	record := func(name string, start time.Time) { t[name] = append(t[name], time.Since(start)) }
	call := func(name string) {
		start := time.Now()
		wt, err := m.Acquire(ctx, repo)
		must(err)
		if !wt.Reused {
			b.Fatalf("%s: not reused: %v", name, wt.Discarded)
		}
		rel, err := wt.Release(ctx)
		must(err)
		if !rel.Pooled {
			b.Fatalf("%s: not pooled", name)
		}
		record(name, start)
	}
	var from, to string
	units := []func(i int){
		func(i int) {
			p := filepath.Join(rawDir, "wt"+strconv.Itoa(i))
			start := time.Now()
			gitT(b, repo, "worktree", "add", "-q", "--detach", p, "HEAD")
			gitT(b, repo, "worktree", "remove", "--force", p)
			record("raw", start)
		},
		func(int) {
			start := time.Now()
			wt, err := today.Add(ctx, repo)
			must(err)
			record("add", start)
			must(wt.Remove(ctx))
			record("today", start)
		},
		func(int) {
			start := time.Now()
			wt, err := m.Acquire(ctx, repo)
			must(err)
			record("cold-setup", start)
			if wt.Reused {
				b.Fatal("the pool was not empty")
			}
			_, err = wt.Release(ctx)
			must(err)
			record("cold", start)
			setHead(to)
			call("change100")
			call("warm")
			setHead(from)
			wt, err = m.Acquire(ctx, repo) // empty the pool for the next cold call
			must(err)
			must(wt.Remove(ctx))
		},
	}
	i := 0
	for b.Loop() {
		from, to = commitA, commitB
		if i%2 == 1 {
			from, to = to, from
		}
		setHead(from)
		for k := range units {
			units[(i+k)%len(units)](i)
		}
		i++
	}
	med := map[string]time.Duration{}
	for name, d := range t {
		med[name] = median(d)
		b.ReportMetric(float64(med[name].Microseconds())/1000, name+"-ms")
	}
	ratio := func(a, c string) float64 { return float64(med[a]) / float64(med[c]) }
	b.ReportMetric(ratio("warm", "raw"), "warm/raw")
	b.ReportMetric(ratio("change100", "raw"), "change100/raw")
	b.ReportMetric(ratio("cold", "today"), "cold/today")
	b.ReportMetric(ratio("cold-setup", "add"), "cold-setup/add")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPoolShapes measures what the shape checks (FIFOs, sockets, hard links and
// permission bits, see tidy) add to a warm pooled call on the 50,000-file repository: warm
// Acquire + Release with and without them, alternating in one run, against a fresh worktree
// (Add + Remove). It reports the medians, shapes/noshapes and shapes/fresh.
func BenchmarkPoolShapes(b *testing.B) {
	repo, _, _ := bigRepo(b)
	ctx := b.Context()
	m := &Manager{Root: filepath.Join(b.TempDir(), "root"), Instance: "bench", PoolSize: 1}
	b.Cleanup(func() { m.Close(context.Background()) })
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	wt, err := m.Acquire(ctx, repo)
	must(err)
	_, err = wt.Release(ctx)
	must(err)
	t := map[string][]time.Duration{}
	call := func(name string, shapes bool) {
		start := time.Now()
		wt, err := m.Acquire(ctx, repo)
		must(err)
		if !wt.Reused {
			b.Fatalf("not reused: %v", wt.Discarded)
		}
		wt.slot.noShapes = !shapes // the next Acquire's checks
		rel, err := wt.Release(ctx)
		must(err)
		if !rel.Pooled {
			b.Fatal("not pooled")
		}
		t[name] = append(t[name], time.Since(start))
	}
	i := 0
	for b.Loop() {
		// Each call prepares with the mode the previous call left; a warm-up call sets it.
		order := []bool{i%2 == 0, i%2 != 0}
		for _, shapes := range order {
			call("setup", shapes)
			name := "noshapes"
			if shapes {
				name = "shapes"
			}
			call(name, shapes)
		}
		if i < 2 {
			start := time.Now()
			fresh, err := m.Add(ctx, repo)
			must(err)
			must(fresh.Remove(ctx))
			t["fresh"] = append(t["fresh"], time.Since(start))
		}
		i++
	}
	med := map[string]time.Duration{}
	for name, d := range t {
		med[name] = median(d)
		b.ReportMetric(float64(med[name].Microseconds())/1000, name+"-ms")
	}
	b.ReportMetric(float64(med["shapes"])/float64(med["noshapes"]), "shapes/noshapes")
	b.ReportMetric(float64(med["shapes"])/float64(med["fresh"]), "shapes/fresh")
	b.ReportMetric(0, "ns/op")
}
