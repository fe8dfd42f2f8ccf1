package settings

import (
	"context"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// TestRepairFaults: whatever goes wrong while a default run's wipe is repaired, the file keeps exactly what
// Cline wrote (never a torn or half-repaired file), no temp file is left behind, and the caller gets a
// warning instead of an error.
func TestRepairFaults(t *testing.T) {
	before := testdata(t, "o_invalid_providers_json_entry.before.json")
	after := testdata(t, "o_invalid_providers_json_entry.after.json")
	tests := []struct {
		name   string
		after  []byte
		inject func(f *faultFS)
		want   string
	}{
		{"read error", after, func(f *faultFS) { f.openErr[memPath] = syscall.EACCES }, "cannot read"},
		{"disk full on write", after, func(f *faultFS) { f.writeErr = syscall.ENOSPC }, "no space left on device"},
		{"write error", after, func(f *faultFS) { f.writeErr = syscall.EIO }, "write"},
		{"fsync error", after, func(f *faultFS) { f.syncErr = syscall.EIO }, "sync"},
		{"rename error", after, func(f *faultFS) { f.renameErr = syscall.EXDEV }, "rename"},
		{"corrupt file", after[:len(after)/2], nil, "not usable after the run"},
		{"not an object", []byte("[]\n"), nil, "not usable after the run"},
		{"empty file", []byte{}, nil, "not usable after the run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fs := memStore(t)
			put(t, s, before)
			run, warns := begin(t, s)
			checkWarnings(t, warns, nil)
			put(t, s, tt.after)
			if tt.inject != nil {
				fs.set(tt.inject)
			}
			want := []string{tt.want}
			if tt.inject != nil && tt.want != "cannot read" {
				want = []string{"dropped provider(s)", tt.want}
			}
			checkWarnings(t, run.End(context.Background()), want)
			fs.set(func(f *faultFS) { f.openErr, f.writeErr, f.syncErr, f.renameErr = map[string]error{}, nil, nil, nil })
			if got := get(t, s); string(got) != string(tt.after) {
				t.Errorf("got\n%s\nwant Cline's bytes untouched\n%s", got, tt.after)
			}
			checkNoLeftovers(t, s)
		})
	}
}

func TestBeginFaults(t *testing.T) {
	pong := testdata(t, "a_text_pong.before.json")
	wipe := testdata(t, "o_no_providers_json.after.json")
	t.Run("unreadable before the run: nothing is touched afterwards", func(t *testing.T) {
		s, fs := memStore(t)
		put(t, s, pong)
		fs.set(func(f *faultFS) { f.openErr[memPath] = syscall.EACCES })
		run, warns := begin(t, s)
		checkWarnings(t, warns, []string{"cannot read"})
		fs.set(func(f *faultFS) { delete(f.openErr, memPath) })
		after := edit(t, pong, func(o *object) { setPath(o, "providers.openai-compatible.settings.model", "x") })
		put(t, s, after)
		checkWarnings(t, run.End(context.Background()), nil)
		if got := get(t, s); string(got) != string(after) {
			t.Errorf("got\n%s\nwant\n%s", got, after)
		}
		checkNoLeftovers(t, s)
	})
	t.Run("unparseable before the run and Cline replaced it: original bytes back", func(t *testing.T) {
		s, _ := memStore(t)
		broken := []byte(`{"version":1,"providers":{"x":{"settings":{"apiKey":"sk-test-123"`)
		put(t, s, broken)
		run, warns := begin(t, s)
		checkWarnings(t, warns, []string{"not usable before the run"})
		put(t, s, wipe)
		checkWarnings(t, run.End(context.Background()), []string{"original bytes were put back"})
		if got := get(t, s); string(got) != string(broken) {
			t.Errorf("got\n%s\nwant the original bytes\n%s", got, broken)
		}
		checkNoLeftovers(t, s)
	})
	t.Run("unparseable before and after, unchanged: no write, no second warning", func(t *testing.T) {
		s, fs := memStore(t)
		broken := []byte("{")
		put(t, s, broken)
		run, warns := begin(t, s)
		checkWarnings(t, warns, []string{"not usable before the run"})
		n := fs.renames
		checkWarnings(t, run.End(context.Background()), nil)
		if fs.renames != n {
			t.Errorf("got %d writes, want none", fs.renames-n)
		}
	})
	t.Run("file removed during the run: pre-run copy put back", func(t *testing.T) {
		s, _ := memStore(t)
		put(t, s, pong)
		run, _ := begin(t, s)
		if err := s.FS.Remove(s.Path); err != nil {
			t.Fatal(err)
		}
		checkWarnings(t, run.End(context.Background()), []string{"disappeared during the run"})
		if got := get(t, s); string(got) != string(pong) {
			t.Errorf("got\n%s\nwant\n%s", got, pong)
		}
	})
	t.Run("no file before, none after: nothing happens", func(t *testing.T) {
		s, fs := memStore(t)
		run, warns := begin(t, s)
		checkWarnings(t, warns, nil)
		checkWarnings(t, run.End(context.Background()), nil)
		if fs.renames != 0 {
			t.Errorf("got %d writes, want none", fs.renames)
		}
		if ok, _ := afero.Exists(s.FS, s.Path); ok {
			t.Error("got a providers.json, want none")
		}
	})
}

// TestWindowsRenameRetry runs the Windows code path on any OS through the injected GOOS and rename function.
func TestWindowsRenameRetry(t *testing.T) {
	before := testdata(t, "o_invalid_providers_json_entry.before.json")
	after := testdata(t, "o_invalid_providers_json_entry.after.json")
	repaired := "dropped provider(s)"
	tests := []struct {
		name       string
		goos       string
		errs       []error // returned by the first renames, in order
		wantCalls  int
		wantSleeps []time.Duration
		wantWarn   []string
		restored   bool
	}{
		{"EPERM then EBUSY then success", "windows", []error{syscall.EPERM, syscall.EBUSY}, 3,
			[]time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, []string{repaired}, true},
		{"ERROR_ACCESS_DENIED and ERROR_SHARING_VIOLATION", "windows",
			[]error{winErrorAccessDenied, winErrorSharingViolation, winErrorSharingViolation}, 4,
			[]time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}, []string{repaired}, true},
		{"gives up after 8 attempts", "windows", slices.Repeat([]error{syscall.EBUSY}, 50), renameAttempts,
			[]time.Duration{10, 20, 40, 80, 160, 320, 400}, []string{repaired, "gave up after 8 attempts"}, false},
		{"other errors are not retried", "windows", []error{syscall.EXDEV}, 1, nil, []string{repaired, "rename"}, false},
		{"no retry off Windows", "linux", []error{syscall.EPERM}, 1, nil, []string{repaired, "rename"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := memStore(t)
			s.GOOS = tt.goos
			var calls int
			s.Rename = func(oldpath, newpath string) error {
				calls++
				if calls <= len(tt.errs) {
					return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: tt.errs[calls-1]}
				}
				return s.FS.Rename(oldpath, newpath)
			}
			var sleeps []time.Duration
			s.sleep = func(d time.Duration) { sleeps = append(sleeps, d) }
			put(t, s, before)
			run, _ := begin(t, s)
			put(t, s, after)
			checkWarnings(t, run.End(context.Background()), tt.wantWarn)
			if calls != tt.wantCalls {
				t.Errorf("got %d rename calls, want %d", calls, tt.wantCalls)
			}
			want := tt.wantSleeps
			if len(want) > 0 && want[0] < time.Millisecond { // written in ms for brevity
				want = slices.Clone(want)
				for i := range want {
					want[i] *= time.Millisecond
				}
			}
			if !slices.Equal(sleeps, want) {
				t.Errorf("got backoff %v, want %v", sleeps, want)
			}
			got := get(t, s)
			if restored := testdata(t, "golden/invalid_entry_wipe.json"); tt.restored && string(got) != string(restored) {
				t.Errorf("got\n%s\nwant restored\n%s", got, restored)
			}
			if !tt.restored && string(got) != string(after) {
				t.Errorf("got\n%s\nwant Cline's bytes\n%s", got, after)
			}
			checkNoLeftovers(t, s)
		})
	}
}

func TestRetryableRename(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&os.LinkError{Err: syscall.EPERM}, true},
		{&os.LinkError{Err: syscall.EBUSY}, true},
		{&os.LinkError{Err: syscall.Errno(5)}, true},
		{&os.LinkError{Err: syscall.Errno(32)}, true},
		{&os.LinkError{Err: syscall.EXDEV}, false},
		{errors.New("x"), false},
	} {
		if got := retryableRename(tt.err); got != tt.want {
			t.Errorf("retryableRename(%v): got %v, want %v", tt.err, got, tt.want)
		}
	}
}
