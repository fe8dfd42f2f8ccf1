package settings

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// Environment of the helper process of TestFileLockOrdersProcesses.
const (
	envLockHelper = "CLINE_MCP_SETTINGS_LOCK_HELPER" // the providers.json the helper works on
)

// TestFileLockOrdersProcesses: another cline-mcp process holds the lock and is in the middle of its
// own read-modify-write (it read the file, it has not written yet). A merge-back in this process
// waits for it, then re-reads the file, so neither write is lost: the other process's refreshed
// token and ours both end up in the file.
func TestFileLockOrdersProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a helper process")
	}
	s := realStore(t)
	s.LockPath = LockPath(s.Path)
	writeReal(t, s.Path, edit(t, testdata(t, "o_provider_override.before.json"), func(o *object) {
		oauth("openai-compatible", "at-old", "rt-old", 1)(o)
		oauth("openai-native", "at-old", "rt-old", 1)(o)
	}), 0o600)
	c, err := s.HostCopy("", Override{Provider: "openai-compatible", Model: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	writeReal(t, c.SettingsPath, edit(t, readReal(t, c.SettingsPath), func(o *object) {
		setPath(o, "providers.openai-compatible.settings.model", "m2")
		setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-ours")
	}), 0o600)

	helper := exec.Command(os.Args[0], "-test.run=^TestFileLockHelperProcess$", "-test.v")
	helper.Env = append(os.Environ(), envLockHelper+"="+s.Path)
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
	lines := bufio.NewScanner(stdout)
	waitFor := func(word string) {
		t.Helper()
		for lines.Scan() {
			if strings.TrimSpace(lines.Text()) == word {
				return
			}
		}
		t.Fatalf("the helper process ended before it said %q", word)
	}
	waitFor("locked") // the helper holds the lock and has read the file

	merged := make(chan []string, 1)
	go func() { merged <- s.MergeAllowed(context.Background(), c, nil) }()
	select {
	case w := <-merged:
		t.Fatalf("MergeAllowed returned (warnings %q) while another process held the lock", w)
	case <-time.After(300 * time.Millisecond): // it is waiting, as it must
	}
	if _, err := io.WriteString(stdin, "write\n"); err != nil {
		t.Fatal(err)
	}
	waitFor("released")
	checkWarnings(t, <-merged, nil)

	final, err := parseObject(readReal(t, s.Path))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"openai-compatible": "at-ours", "openai-native": "at-helper"} {
		if got, _ := dig(final, "providers", id, "settings", "auth", "accessToken"); got != want {
			t.Errorf("%s: got token %v, want %s (a write was lost)", id, got, want)
		}
	}
	if got, _ := dig(final, "providers", "openai-compatible", "settings", "model"); got == "m2" {
		t.Error("the override reached the user's file")
	}
}

// TestFileLockHelperProcess is the other cline-mcp process of TestFileLockOrdersProcesses: it takes
// the lock, reads the file, says "locked", waits for "write" on stdin, writes openai-native's
// refreshed token into what it read, releases the lock and says "released".
func TestFileLockHelperProcess(t *testing.T) {
	path := os.Getenv(envLockHelper)
	if path == "" {
		t.Skip("helper process of TestFileLockOrdersProcesses")
	}
	unlock, err := lockFile(context.Background(), LockPath(path), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "write" {
		t.Fatal("no write command")
	}
	writeReal(t, path, edit(t, data, func(o *object) {
		setPath(o, "providers.openai-native.settings.auth.accessToken", "at-helper")
	}), 0o600)
	unlock()
	os.Stdout.WriteString("released\n")
}

// TestUpdateRedoesWhenTheFileChanged: a writer that does not take the lock (a running CLI saving a
// refreshed token) replaces the file between our read and our rename. The write is abandoned before
// the rename and redone on the newer bytes, so both changes survive; a file that keeps changing is
// never overwritten, and the warning says so.
func TestUpdateRedoesWhenTheFileChanged(t *testing.T) {
	base := edit(t, testdata(t, "o_provider_override.before.json"), func(o *object) {
		oauth("openai-compatible", "at-old", "rt-old", 1)(o)
		oauth("openai-native", "at-old", "rt-old", 1)(o)
	})
	cliWrite := func(t *testing.T, fs *faultFS, path, token string) {
		// What a CLI does: read the file, change its provider's token, replace the file. It goes to
		// the file system under the fault layer, so it does not count as one of our reads.
		b, err := afero.ReadFile(fs.Fs, path)
		if err != nil {
			t.Error(err)
			return
		}
		if err := afero.WriteFile(fs.Fs, path, edit(t, b, func(o *object) {
			setPath(o, "providers.openai-native.settings.auth.accessToken", token)
		}), 0o600); err != nil {
			t.Error(err)
		}
	}
	prepare := func(t *testing.T) (*Store, *faultFS, *Copy) {
		s, fs := memStore(t)
		put(t, s, base)
		c, err := s.HostCopy("", Override{Provider: "openai-compatible"})
		if err != nil {
			t.Fatal(err)
		}
		put(t, &Store{FS: s.FS, Path: c.SettingsPath}, edit(t, c.snapshot, func(o *object) {
			setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-ours")
		}))
		return s, fs, c
	}
	t.Run("changed once: redone on the newer file", func(t *testing.T) {
		s, fs, c := prepare(t)
		fs.set(func(f *faultFS) {
			f.reads = map[string]int{}
			f.onRead = func(name string, n int) {
				if name == s.Path && n == 2 { // 1: the merge's read; 2: the check before the rename
					cliWrite(t, f, s.Path, "at-cli")
				}
			}
		})
		renames := fs.renames
		checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), nil)
		c.Close()
		final, err := parseObject(get(t, s))
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]string{"openai-compatible": "at-ours", "openai-native": "at-cli"} {
			if got, _ := dig(final, "providers", id, "settings", "auth", "accessToken"); got != want {
				t.Errorf("%s: got token %v, want %s", id, got, want)
			}
		}
		if n := fs.renames - renames; n != 1 { // the first attempt never renamed
			t.Errorf("got %d renames, want 1", n)
		}
		checkNoLeftovers(t, s)
	})
	t.Run("changing every time: never overwritten, warned", func(t *testing.T) {
		s, fs, c := prepare(t)
		fs.set(func(f *faultFS) {
			f.reads = map[string]int{}
			f.onRead = func(name string, n int) {
				if name == s.Path && n%2 == 0 {
					cliWrite(t, f, s.Path, "at-cli-"+string(rune('a'+n)))
				}
			}
		})
		checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), []string{"changed while it was being updated"})
		c.Close()
		final, err := parseObject(get(t, s))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := dig(final, "providers", "openai-native", "settings", "auth", "accessToken"); got != "at-cli-"+string(rune('a'+2*updateAttempts)) {
			t.Errorf("got %v, want the CLI's last token", got)
		}
		checkNoLeftovers(t, s)
	})
}

// TestLockFileTimesOut: a lock another process never releases ends the wait with an error after the
// bound instead of hanging the call's cleanup.
func TestLockFileTimesOut(t *testing.T) {
	path := LockPath(realStore(t).Path)
	unlock, err := lockFile(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := lockFile(context.Background(), path, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "held it") {
		t.Errorf("got %v, want a timeout error", err)
	}
	if fi, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if mode := fi.Mode().Perm(); mode&0o077 != 0 && runtime.GOOS != "windows" {
		t.Errorf("lock file mode %v, want 0600", mode)
	}
}
