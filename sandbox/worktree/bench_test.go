package worktree

import (
	"fmt"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
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

// interleave runs ours and other once per benchmark iteration, alternating which goes first so
// machine noise hits both alike, and reports the medians as <ours>-ms and <other>-ms and their
// ratio median(ours)/median(other).
func interleave(b *testing.B, otherName string, ours, other func(i int)) {
	timed := func(f func(int)) func(int) time.Duration {
		return func(i int) time.Duration {
			start := time.Now()
			f(i)
			return time.Since(start)
		}
	}
	interleaveTimed(b, otherName, timed(ours), timed(other))
}

// interleaveTimed is interleave for functions that time themselves (to leave set-up and
// tear-down out).
func interleaveTimed(b *testing.B, otherName string, ours, other func(i int) time.Duration) {
	var to, tr []time.Duration
	i := 0
	for b.Loop() {
		i++
		if i%2 == 0 {
			to = append(to, ours(i))
			tr = append(tr, other(i))
		} else {
			tr = append(tr, other(i))
			to = append(to, ours(i))
		}
	}
	mo, mr := median(to), median(tr)
	b.ReportMetric(float64(mo.Microseconds())/1000, "ours-ms")
	b.ReportMetric(float64(mr.Microseconds())/1000, otherName+"-ms")
	b.ReportMetric(float64(mo)/float64(mr), "ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAddRemove compares Manager.Add+Remove with plain `git worktree add --detach` +
// `git worktree remove --force` on a 10,000-file repository; the ratio is median(ours)/median(raw).
func BenchmarkAddRemove(b *testing.B) {
	repo := benchRepo(b, 10_000)
	m := &Manager{Root: filepath.Join(b.TempDir(), "root"), Instance: "bench"}
	rawDir := b.TempDir()
	ctx := b.Context()
	interleave(b, "raw", func(int) {
		wt, err := m.Add(ctx, repo)
		if err != nil {
			b.Fatal(err)
		}
		if err := wt.Remove(ctx); err != nil {
			b.Fatal(err)
		}
	}, func(i int) {
		p := filepath.Join(rawDir, "wt"+strconv.Itoa(i))
		gitT(b, repo, "worktree", "add", "-q", "--detach", p, "HEAD")
		gitT(b, repo, "worktree", "remove", "--force", p)
	})
}

// BenchmarkEvidence measures one git.Evidence snapshot of a 10,000-file repository, clean and with
// 100 modified plus 100 untracked files, against the evidence path this package used before
// the trust boundary (`git status` plus `git add -A` into a copy of the index, which runs the
// repository's filters); the ratio is median(ours)/median(legacy).
func BenchmarkEvidence(b *testing.B) {
	repo := benchRepo(b, 10_000)
	g := &git.Git{}
	run := func(b *testing.B) {
		interleave(b, "legacy", func(int) {
			if _, err := g.Evidence(b.Context(), repo); err != nil {
				b.Fatal(err)
			}
		}, func(int) { legacyEvidence(b, repo) })
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

// legacyEvidence is the git work of the evidence path before the trust boundary, for the
// benchmark's baseline: rev-parse, symbolic-ref, HEAD, status, for-each-ref, and write-tree /
// add -A / write-tree on a copy of the index.
func legacyEvidence(b *testing.B, repo string) {
	b.Helper()
	g := &git.Git{}
	ctx := b.Context()
	o := git.Opts{Dir: repo}
	for _, args := range [][]string{
		{"rev-parse", "--is-inside-work-tree", "--show-toplevel", "--git-common-dir", "--git-path", "index"},
		{"symbolic-ref", "-q", "HEAD"},
		{"rev-parse", "--verify", "-q", "--end-of-options", "HEAD^{commit}"},
		{"status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignore-submodules=none"},
		{"for-each-ref", "--format=%(objectname) %(refname)"},
	} {
		if _, err := g.Run(ctx, o, args...); err != nil {
			b.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	if err != nil {
		b.Fatal(err)
	}
	tmp := filepath.Join(b.TempDir(), "index")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		b.Fatal(err)
	}
	o.Env = []string{"GIT_INDEX_FILE=" + tmp}
	cfg := []string{"-c", "core.splitIndex=false", "-c", "index.sparse=false"}
	for _, args := range [][]string{{"write-tree"}, {"add", "-A", "--ignore-errors"}, {"write-tree"}} {
		if _, err := g.Run(ctx, o, append(cfg, args...)...); err != nil {
			b.Fatal(err)
		}
	}
}
