package settings

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/afero"
)

var runtimeGOOS = runtime.GOOS

// maxFileSize caps what we read: a providers.json is a few KiB; anything huge is not ours to rewrite.
const maxFileSize = 4 << 20

// Store is one providers.json and the bridge's writes to it.
//
// Set the exported fields, then share one *Store among all calls that use the same file. Every write of
// Path — a default run's repair (Run.End) and a merge-back (MergeAllowed) — is one read-modify-write
// under the Store's mutex and, with LockPath set, an advisory file lock shared by every cline-mcp
// process of the user (see update). Within the process, a default run (whose CLI writes the user's
// file) holds a shared hold on the Store from Begin to End, and a merge-back that has something to
// write takes it exclusively for that write only, so no merge ever races a CLI this process started.
type Store struct {
	FS   afero.Fs // afero.NewOsFs() in production
	Path string   // providers.json, from Path()
	// LockPath is the cross-process lock file, LockPath(Path) in production; "" takes no file lock
	// (tests on in-memory file systems).
	LockPath string
	GOOS     string                              // "" = runtime.GOOS; "windows" turns on the rename retry
	Rename   func(oldpath, newpath string) error // nil = FS.Rename
	TempDir  string                              // parent of private temp dirs; "" = os.TempDir()
	// OAuth refreshes a sign-in on the host before a container run (EnsureFresh); the zero value
	// uses the CLI's endpoints.
	OAuth OAuth

	mu    sync.Mutex
	runs  rwLock              // default runs share it; a merge-back that writes holds it alone
	sleep func(time.Duration) // nil = time.Sleep; tests record the backoff instead
}

// Override is a call's provider/model override; either may be empty. The zero value means a default run.
// It picks the provider a private copy is made for (PrivateCopy, HostCopy); the user's file never
// carries an override.
type Override struct {
	Provider string
	Model    string
}

// IsZero reports a default run.
func (o Override) IsZero() bool { return o.Provider == "" && o.Model == "" }

type fileState int

const (
	stateOK          fileState = iota
	stateAbsent                // no file before the run
	stateUnreadable            // could not read: do nothing after the run
	stateUnparseable           // read but not a JSON object: put the bytes back if Cline replaced them
)

// Run is one default CLI run between Begin and End: the CLI works on the user's file itself (so its
// own token refreshes land there directly), and End repairs what the CLI's invalid-entry wipe lost.
type Run struct {
	s         *Store
	state     fileState
	preBytes  []byte
	pre       *object // parsed pre-run file (stateOK only)
	backupDir string

	once sync.Once
}

// ErrCancelled is returned by Begin when ctx ended while the run waited for a merge-back.
var ErrCancelled = errors.New("cancelled while waiting for a merge of refreshed credentials into the settings file")

// Begin is called before a default run (no provider/model override: those run on a HostCopy and
// never touch the user's file). It takes the Store's shared hold — waiting, in arrival order, only
// while a merge-back writes or waits to — and keeps a private pre-run copy of the file (0600 in a
// fresh 0700 temp dir; it outlives End only if the process dies mid-run, as a copy to recover from).
// It fails only when ctx ends while it waits (ErrCancelled, wrapping ctx.Err()); problems with the
// file come back as warnings. After a nil error, End must be called exactly once, on every path.
func (s *Store) Begin(ctx context.Context) (*Run, []string, error) {
	if err := s.runs.RLock(ctx); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCancelled, err)
	}
	r, warns := s.begin()
	return r, warns, nil
}

func (s *Store) begin() (*Run, []string) {
	r := &Run{s: s}
	var warns []string
	data, err := s.readFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.state = stateAbsent
	case err != nil:
		r.state = stateUnreadable
		return r, append(warns, fmt.Sprintf("settings: cannot read %s before the run (%v); it will not be checked afterwards", s.Path, errText(err)))
	default:
		r.preBytes = data
		if r.pre, err = parseObject(data); err != nil {
			r.state = stateUnparseable
			warns = append(warns, fmt.Sprintf("settings: %s is not usable before the run (%v); Cline may replace it, so the original bytes will be put back afterwards", s.Path, err))
		}
		if err := r.keepBackup(data); err != nil {
			warns = append(warns, fmt.Sprintf("settings: no private pre-run copy of %s (%v); the in-memory copy is still used", s.Path, errText(err)))
		}
	}
	return r, warns
}

func (r *Run) keepBackup(data []byte) error {
	dir, err := afero.TempDir(r.s.FS, r.s.TempDir, "cline-mcp-settings-backup-")
	if err != nil {
		return err
	}
	r.backupDir = dir
	if err := r.s.FS.Chmod(dir, 0o700); err != nil {
		return err
	}
	f, err := r.s.FS.OpenFile(filepath.Join(dir, "providers.json"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// File is the providers.json the Store guards (Path), for consumers that take the Store through an
// interface.
func (s *Store) File() string { return s.Path }

// End is r.End(ctx): the Store's half of a default run, for consumers that take the Store through
// an interface.
func (s *Store) End(ctx context.Context, r *Run) []string { return r.End(ctx) }

// End repairs data loss: what the CLI dropped from the file during the run is put back (see guard),
// as one read-modify-write (see update), then releases the run's shared hold. Call it on every path
// (defer); later calls do nothing. It returns warnings, never an error.
func (r *Run) End(ctx context.Context) []string {
	var warns []string
	r.once.Do(func() {
		defer r.s.runs.RUnlock()
		warns = r.end(ctx)
		if r.backupDir != "" {
			if err := r.s.FS.RemoveAll(r.backupDir); err != nil {
				warns = append(warns, fmt.Sprintf("settings: could not remove the private pre-run copy %s: %v", r.backupDir, errText(err)))
			}
		}
	})
	return warns
}

func (r *Run) end(ctx context.Context) []string {
	if r.state == stateUnreadable {
		return nil // warned in Begin
	}
	path := r.s.Path
	return r.s.update(ctx, "it keeps what Cline wrote, so what Cline dropped from it was not put back", func(data []byte, err error) ([]byte, []string) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if r.state == stateAbsent {
				return nil, nil
			}
			return r.preBytes, []string{fmt.Sprintf("settings: %s disappeared during the run; the pre-run copy was put back", path)}
		case err != nil:
			return nil, []string{fmt.Sprintf("settings: cannot read %s after the run (%v); the check was skipped, the file was left as it is", path, errText(err))}
		}
		if r.state == stateUnparseable {
			if bytes.Equal(data, r.preBytes) {
				return nil, nil
			}
			return r.preBytes, []string{fmt.Sprintf("settings: %s was not valid before the run and Cline rewrote it; the original bytes were put back (fix the file so Cline can read it)", path)}
		}
		if r.pre == nil {
			return nil, nil // no file before the run: nothing to lose
		}
		doc, err := parseObject(data)
		if err != nil {
			return nil, []string{fmt.Sprintf("settings: %s is not usable after the run (%v); the check was skipped, the file was left untouched", path, err)}
		}
		var warns []string
		lostProviders, lostFields := r.guard(doc)
		if len(lostProviders) > 0 {
			warns = append(warns, fmt.Sprintf("settings: Cline dropped provider(s) %s from %s during the run (it rewrites the whole file when one entry fails its schema, e.g. a baseUrl that is not a URL); they were put back", strings.Join(lostProviders, ", "), path))
		}
		if len(lostFields) > 0 {
			warns = append(warns, fmt.Sprintf("settings: Cline dropped %d field(s) from %s during the run (%s); they were put back", len(lostFields), path, strings.Join(firstN(lostFields, 5), ", ")))
		}
		if len(warns) == 0 {
			return nil, nil
		}
		return doc.encode(), warns
	})
}

// guard puts back everything that existed before the run and is gone now: whole providers (the CLI's
// invalid-entry wipe) and single fields at any depth (the CLI also drops keys its schema does not know).
// If the provider lastUsedProvider named had to be put back, lastUsedProvider is put back too: the wipe points
// it at "cline". Values that changed (refreshed tokens, new models) are never touched here.
func (r *Run) guard(doc *object) (lostProviders, lostFields []string) {
	preProviders := r.pre.getObject("providers")
	providers := doc.getObject("providers")
	if preProviders != nil && providers != nil {
		for _, id := range preProviders.keys {
			if _, ok := providers.get(id); !ok {
				providers.setLike(id, clone(preProviders.vals[id]), preProviders.keys)
				lostProviders = append(lostProviders, id)
			}
		}
	}
	lostFields = fillMissing(doc, r.pre, "")
	if lu, ok := r.pre.get("lastUsedProvider"); ok && len(lostProviders) > 0 {
		if id, isStr := lu.(string); isStr && slices.Contains(lostProviders, id) {
			if cur, ok := doc.get("lastUsedProvider"); !ok || !equal(cur, lu) {
				doc.setLike("lastUsedProvider", lu, r.pre.keys)
			}
		}
	}
	return lostProviders, lostFields
}

// fillMissing copies into dst every key of src that dst lacks, recursing where both hold objects.
// It returns the dotted paths it filled.
func fillMissing(dst, src *object, prefix string) []string {
	var filled []string
	for _, k := range src.keys {
		sv := src.vals[k]
		dv, ok := dst.get(k)
		if !ok {
			dst.setLike(k, clone(sv), src.keys)
			filled = append(filled, prefix+k)
			continue
		}
		so, sIsObj := sv.(*object)
		do, dIsObj := dv.(*object)
		if sIsObj && dIsObj {
			filled = append(filled, fillMissing(do, so, prefix+k+".")...)
		}
	}
	return filled
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}

// errText is err's message; it exists so every warning goes through one place that never adds file content.
func errText(err error) string { return err.Error() }
