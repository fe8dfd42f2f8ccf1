package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// benchRepo generates a committed repository of n small files in 100 directories.
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	gitT(b, dir, "init", "-q")
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%100), "f"+strconv.Itoa(i)+".txt")
		writeFile(b, p, fmt.Sprintf("file %d\nsome small content\n", i))
	}
	gitT(b, dir, "add", "-A")
	gitT(b, dir, "commit", "-q", "-m", "generated")
	return dir
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkAddRemove compares Manager.Add+Remove with plain `git worktree add --detach` +
// `git worktree remove --force` on a 10,000-file repository. The two are interleaved in every
// iteration so machine noise hits both alike; the reported ratio is median(ours)/median(raw).
func BenchmarkAddRemove(b *testing.B) {
	repo := benchRepo(b, 10_000)
	m := &Manager{Root: filepath.Join(b.TempDir(), "root"), Instance: "bench"}
	rawDir := b.TempDir()
	ctx := b.Context()
	var ours, raw []time.Duration
	i := 0
	for b.Loop() {
		i++
		runOurs := func() {
			start := time.Now()
			wt, err := m.Add(ctx, repo)
			if err != nil {
				b.Fatal(err)
			}
			if err := wt.Remove(ctx); err != nil {
				b.Fatal(err)
			}
			ours = append(ours, time.Since(start))
		}
		runRaw := func() {
			start := time.Now()
			p := filepath.Join(rawDir, "wt"+strconv.Itoa(i))
			gitT(b, repo, "worktree", "add", "-q", "--detach", p, "HEAD")
			gitT(b, repo, "worktree", "remove", "--force", p)
			raw = append(raw, time.Since(start))
		}
		if i%2 == 0 {
			runOurs()
			runRaw()
		} else {
			runRaw()
			runOurs()
		}
	}
	mo, mr := median(ours), median(raw)
	b.ReportMetric(float64(mo.Microseconds())/1000, "ours-ms")
	b.ReportMetric(float64(mr.Microseconds())/1000, "raw-ms")
	b.ReportMetric(float64(mo)/float64(mr), "ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkEvidence measures one Evidence snapshot of a 10,000-file repository, clean and with
// 100 modified plus 100 untracked files.
func BenchmarkEvidence(b *testing.B) {
	repo := benchRepo(b, 10_000)
	g := &Git{}
	run := func(b *testing.B) {
		for b.Loop() {
			if _, err := g.Evidence(b.Context(), repo); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("clean", run)
	for i := range 100 {
		writeFile(b, filepath.Join(repo, fmt.Sprintf("d%02d", i), "f"+strconv.Itoa(i)+".txt"), "changed\n")
		writeFile(b, filepath.Join(repo, "new", strconv.Itoa(i)+".txt"), "new\n")
	}
	b.Run("dirty", run)
	if err := os.RemoveAll(filepath.Join(repo, "new")); err != nil {
		b.Fatal(err)
	}
}
