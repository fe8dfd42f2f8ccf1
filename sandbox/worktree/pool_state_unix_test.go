//go:build unix

package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The pool's second line of defence: state git neither reports nor undoes —
// FIFOs, sockets, devices, hard links, permission and set-id bits of files and directories — must
// not survive into the next call, and the next call must be told what was found.

// stateRepoFiles has two tracked files with the same content, which a run can hard-link together
// without git noticing (the content stays the commit's).
var stateRepoFiles = func() map[string]string {
	f := maps.Clone(poolRepoFiles)
	f["keep/copy"] = "same\n"
	return f
}()

// shapes describes every entry below dir without opening any: type and permission bits (set-id
// and sticky included) and, for non-directories, the link count.
func shapes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".git" {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && !fi.IsDir() {
			desc += fmt.Sprintf(" links=%d", st.Nlink)
		}
		out[filepath.ToSlash(rel)] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// freshShapes is shapes of a new worktree of repo's HEAD.
func freshShapes(t *testing.T, repo string) map[string]string {
	t.Helper()
	wt, err := newManager(t).Add(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Remove(context.Background())
	return shapes(t, wt.Path)
}

// plantSocket leaves a unix socket at p (bound in a short temp dir, since socket paths are
// limited to ~100 bytes, then renamed into place: the inode stays a socket).
func plantSocket(t *testing.T, p string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if err := os.Rename(filepath.Join(dir, "s"), p); err != nil {
		t.Fatal(err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantMode fails unless the entry at p exists with the type and permission bits of mode: the
// proof that a plant happened.
func wantMode(t *testing.T, p string, mode fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatalf("the plant did not happen: %v", err)
	}
	const mask = fs.ModeType | fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
	if got := fi.Mode() & mask; got != mode {
		t.Fatalf("the plant did not happen: %s has mode %v, want %v", p, got, mode)
	}
}

func wantLinks(t *testing.T, p string, n uint64) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := uint64(fi.Sys().(*syscall.Stat_t).Nlink); got != n {
		t.Fatalf("%s has %d links, want %d", p, got, n)
	}
}

// TestPoolRemovesStateGitDoesNotUndo: every kind of entry git would leave in place — a FIFO or
// socket (untracked or where a tracked file was), a device node, a hard link of a tracked file
// (to a file outside the worktree, or between two tracked files with the same content),
// group/other bits and set-id bits on a file, group/other-writable, set-id, sticky and
// unreadable directories, and each of them behind a symlink to outside — is gone when the
// worktree is taken again: the worktree is reused, identical to a fresh one down to permission
// bits and link counts, nothing outside the worktree is touched, and Cleaned names what was found.
func TestPoolRemovesStateGitDoesNotUndo(t *testing.T) {
	repo := newRepo(t, stateRepoFiles)
	want, wantShape := fresh(t, repo), freshShapes(t, repo)
	type plant struct {
		do   func(t *testing.T, p func(string) string, outside string)
		path string // what Cleaned must name
		what string // ... with this word; "" when it must not name it (an untracked entry's mode)
	}
	plants := map[string]plant{
		"untracked FIFO": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, syscall.Mkfifo(p("notes.txt"), 0o644))
			wantMode(t, p("notes.txt"), fs.ModeNamedPipe|0o644)
		}, "notes.txt", "FIFO"},
		"FIFO instead of a tracked file": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Remove(p("README.md")))
			mustDo(t, syscall.Mkfifo(p("README.md"), 0o644))
			wantMode(t, p("README.md"), fs.ModeNamedPipe|0o644)
		}, "README.md", "FIFO"},
		"FIFO in a tracked directory": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, syscall.Mkfifo(p("src/deep/pipe"), 0o600))
			wantMode(t, p("src/deep/pipe"), fs.ModeNamedPipe|0o600)
		}, "src/deep/pipe", "FIFO"},
		"unix socket": {func(t *testing.T, p func(string) string, _ string) {
			plantSocket(t, p("src/agent.sock"))
			wantMode(t, p("src/agent.sock"), fs.ModeSocket|fs.ModePerm&^mustUmask(t))
		}, "src/agent.sock", "socket"},
		"socket instead of a tracked file": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Remove(p("src/a.go")))
			plantSocket(t, p("src/a.go"))
			if fi, err := os.Lstat(p("src/a.go")); err != nil || fi.Mode().Type() != fs.ModeSocket {
				t.Fatalf("the plant did not happen: %v", err)
			}
		}, "src/a.go", "socket"},
		"hard link to a file outside": {func(t *testing.T, p func(string) string, outside string) {
			mustDo(t, os.Remove(p("src/b.go")))
			mustDo(t, os.Link(filepath.Join(outside, "shared.go"), p("src/b.go")))
			wantLinks(t, p("src/b.go"), 2)
		}, "src/b.go", "hard link"},
		"hard link between tracked files": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Remove(p("keep/copy")))
			mustDo(t, os.Link(p("keep/unchanged"), p("keep/copy")))
			wantLinks(t, p("keep/copy"), 2)
		}, "keep/copy", "hard link"},
		"group/other-writable file": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Chmod(p("src/a.go"), 0o666))
			wantMode(t, p("src/a.go"), 0o666)
		}, "src/a.go", "mode"},
		"file without group/other read": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Chmod(p("README.md"), 0o600))
			wantMode(t, p("README.md"), 0o600)
		}, "README.md", "mode"},
		"setuid file": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Chmod(p("tools/run.sh"), 0o755|fs.ModeSetuid))
			wantMode(t, p("tools/run.sh"), 0o755|fs.ModeSetuid)
		}, "tools/run.sh", "mode"},
		"setgid file": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Chmod(p("src/b.go"), 0o644|fs.ModeSetgid))
			wantMode(t, p("src/b.go"), 0o644|fs.ModeSetgid)
		}, "src/b.go", "mode"},
		"world-writable directory": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Chmod(p("src"), 0o777))
			wantMode(t, p("src"), fs.ModeDir|0o777)
		}, "src", "mode"},
		"setgid sticky directory": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Chmod(p("doc"), 0o775|fs.ModeSetgid|fs.ModeSticky))
			wantMode(t, p("doc"), fs.ModeDir|0o775|fs.ModeSetgid|fs.ModeSticky)
		}, "doc", "mode"},
		"unreadable directory": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Chmod(p("src/deep"), 0))
			wantMode(t, p("src/deep"), fs.ModeDir)
		}, "src/deep", "mode"},
		"group-writable empty untracked directory": {func(t *testing.T, p func(string) string, _ string) {
			mustDo(t, os.Mkdir(p("empty"), 0o777|fs.ModeSetgid))
			mustDo(t, os.Chmod(p("empty"), 0o777|fs.ModeSetgid))
			wantMode(t, p("empty"), fs.ModeDir|0o777|fs.ModeSetgid)
		}, "empty", ""},
		"new file of another umask": {func(t *testing.T, p func(string) string, _ string) {
			writeFile(t, p("src/new.go"), "package a\n")
			mustDo(t, os.Chmod(p("src/new.go"), 0o664))
			wantMode(t, p("src/new.go"), 0o664)
		}, "src/new.go", ""},
		"device node": {func(t *testing.T, p func(string) string, _ string) {
			if err := syscall.Mknod(p("src/null"), syscall.S_IFCHR|0o666, 0x103); err != nil {
				t.Skipf("mknod is not allowed here (%v); device nodes are removed like FIFOs", err)
			}
		}, "src/null", "device"},
	}
	for _, name := range slices.Sorted(maps.Keys(plants)) {
		pl := plants[name]
		t.Run(name, func(t *testing.T) {
			outside := t.TempDir()
			mustDo(t, syscall.Mkfifo(filepath.Join(outside, "pipe"), 0o600))
			writeFile(t, filepath.Join(outside, "open.txt"), "outside\n")
			mustDo(t, os.Chmod(filepath.Join(outside, "open.txt"), 0o666))
			writeFile(t, filepath.Join(outside, "shared.go"), stateRepoFiles["src/b.go"])
			outsideBefore := shapes(t, outside)
			m := newPool(t, 1)
			wt := acquire(t, m, repo)
			first := wt.Path
			pl.do(t, func(rel string) string { return filepath.Join(first, filepath.FromSlash(rel)) }, outside)
			// A symlink to outside, planted with every plant: nothing may be followed through it.
			mustDo(t, os.Symlink(outside, filepath.Join(first, "doc", "out")))
			if rel := release(t, wt); !rel.Pooled {
				t.Fatalf("Release: %+v, want pooled", rel)
			}

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			wt, err := m.Acquire(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			defer release(t, wt)
			if !wt.Reused || wt.Path != first || len(wt.Discarded) != 0 {
				t.Fatalf("second Acquire: Reused %v, path %s, discarded %v; want %s cleaned and reused", wt.Reused, wt.Path, wt.Discarded, first)
			}
			wantSame(t, "shapes of the reused worktree", shapes(t, wt.Path), wantShape)
			if t.Failed() {
				t.FailNow() // reading the files could block on a FIFO
			}
			wantSame(t, "files of the reused worktree", files(t, wt.Path), want)
			wantSame(t, "outside the worktree", shapes(t, outside), outsideBefore)
			if st := gitT(t, wt.Path, "status", "--porcelain", "--ignored"); st != "" {
				t.Errorf("git status in the reused worktree:\n%s\nwant clean", st)
			}
			// The next run writes a tracked file: nothing outside changes.
			writeFile(t, filepath.Join(wt.Path, "src", "b.go"), "written by the next run\n")
			if b, err := os.ReadFile(filepath.Join(outside, "shared.go")); err != nil || string(b) != stateRepoFiles["src/b.go"] {
				t.Errorf("outside shared.go: got %q (%v), want it untouched", b, err)
			}
			named := slices.ContainsFunc(wt.Cleaned, func(f Finding) bool { return f.Path == pl.path && strings.Contains(f.What, pl.what) })
			if pl.what != "" && !named {
				t.Errorf("Cleaned %v: want %q named as %s", wt.Cleaned, pl.path, pl.what)
			}
			if pl.what == "" && named {
				t.Errorf("Cleaned %v: the permissions of %q, an untracked entry git deletes anyway, are no news", wt.Cleaned, pl.path)
			}
			for _, f := range wt.Cleaned {
				if strings.HasPrefix(f.Path, "doc/out/") {
					t.Errorf("Cleaned %v: an entry behind the planted symlink was looked at", f)
				}
			}
		})
	}
}

func mustUmask(t *testing.T) fs.FileMode {
	t.Helper()
	old := syscall.Umask(0o22)
	syscall.Umask(old)
	return fs.FileMode(old)
}

// TestPoolFIFONeverHangsTheNextCall: FIFOs a run left where a tracked file was and where
// nothing was would block any reader of the next call (Cline's read_files, grep -r) until its
// timeout. After Acquire, reading every file of the worktree the way a program does (blocking
// opens) finishes.
func TestPoolFIFONeverHangsTheNextCall(t *testing.T) {
	repo := newRepo(t, poolRepoFiles)
	m := newPool(t, 1)
	wt := acquire(t, m, repo)
	for _, rel := range []string{"README.md", "TODO.txt", "src/deep/c.txt"} {
		p := filepath.Join(wt.Path, filepath.FromSlash(rel))
		os.Remove(p)
		mustDo(t, syscall.Mkfifo(p, 0o644))
		wantMode(t, p, fs.ModeNamedPipe|0o644)
	}
	release(t, wt)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	wt, err := m.Acquire(ctx, repo)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer release(t, wt)
	done := make(chan error, 1)
	go func() { done <- readAll(wt.Path) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		// Unblock the reader (a writer end opened on a FIFO lets its pending open return).
		filepath.WalkDir(wt.Path, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type() == fs.ModeNamedPipe {
				if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			}
			return nil
		})
		<-done
		t.Fatalf("reading the reused worktree hung: a FIFO was left in it (Cleaned %v)", wt.Cleaned)
	}
}

// readAll opens and reads every non-directory below dir (the top's .git aside) like a program
// that trusts what it finds.
func readAll(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(p) == ".git" {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a dangling symlink
			}
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	})
}

// TestTouchedNamesStateGitDoesNotReport: the run's touched report lists what git's status would
// not show — a FIFO (new, or where a tracked file was), a hard link between tracked files, a
// group/other-writable file and directory — next to what git reports, for a fresh and a pooled
// worktree alike.
func TestTouchedNamesStateGitDoesNotReport(t *testing.T) {
	repo := newRepo(t, stateRepoFiles)
	for _, pooled := range []bool{false, true} {
		t.Run(fmt.Sprintf("pooled=%v", pooled), func(t *testing.T) {
			m := newPool(t, 1)
			if !pooled {
				m.PoolSize = 0
			}
			wt := acquire(t, m, repo)
			defer release(t, wt)
			p := func(rel string) string { return filepath.Join(wt.Path, filepath.FromSlash(rel)) }
			mustDo(t, syscall.Mkfifo(p("pipe"), 0o644))
			mustDo(t, os.Remove(p("README.md")))
			mustDo(t, syscall.Mkfifo(p("README.md"), 0o644))
			mustDo(t, os.Chmod(p("src/a.go"), 0o666))
			mustDo(t, os.Remove(p("keep/copy")))
			mustDo(t, os.Link(p("keep/unchanged"), p("keep/copy")))
			mustDo(t, os.Chmod(p("src"), 0o777))
			writeFile(t, p("new.txt"), "new\n")
			wantMode(t, p("pipe"), fs.ModeNamedPipe|0o644)
			wantLinks(t, p("keep/copy"), 2)

			touched, err := m.Touched(t.Context(), wt)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range touched {
				got[f.Path] = f.Status
			}
			want := map[string]string{"pipe": "A", "README.md": "T", "src/a.go": "M", "keep/copy": "M", "keep/unchanged": "M", "src": "M", "new.txt": "A"}
			if !maps.Equal(got, want) {
				t.Errorf("Touched: got %v, want %v", got, want)
			}
		})
	}
}
