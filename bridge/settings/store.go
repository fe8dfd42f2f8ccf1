package settings

import (
	"bytes"
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
// Set the exported fields, then share one *Store among all calls that use the same file: its internal mutex
// serialises the bridge's own read-modify-write cycles (default runs share the read lock and may end at once).
// Run ordering against each other is the caller's job, through RWLock.
type Store struct {
	FS      afero.Fs                            // afero.NewOsFs() in production
	Path    string                              // providers.json, from Path()
	GOOS    string                              // "" = runtime.GOOS; "windows" turns on the rename retry
	Rename  func(oldpath, newpath string) error // nil = FS.Rename
	TempDir string                              // parent of private temp dirs; "" = os.TempDir()

	mu    sync.Mutex
	sleep func(time.Duration) // nil = time.Sleep; tests record the backoff instead
}

// Override is a call's provider/model override; either may be empty. The zero value means a default run.
type Override struct {
	Provider string
	Model    string
}

// IsZero reports a default run (no tracked fields).
func (o Override) IsZero() bool { return o.Provider == "" && o.Model == "" }

type fileState int

const (
	stateOK          fileState = iota
	stateAbsent                // no file before the run
	stateUnreadable            // could not read: do nothing after the run
	stateUnparseable           // read but not a JSON object: put the bytes back if Cline replaced them
)

// field is a tracked field's pre-run state; absent is a state of its own.
type field struct {
	present bool
	val     any
}

// Run is one CLI run between Begin and End.
type Run struct {
	s         *Store
	state     fileState
	preBytes  []byte
	pre       *object // parsed pre-run file (stateOK only)
	backupDir string

	tracked      bool // override run: restore lastUsedProvider and the target's model/reasoning
	target       string
	lastUsed     field
	blockExisted bool
	model        field
	reasoning    field

	once sync.Once
}

// Begin is called before a run, after the caller took the lock (write lock for an override, read lock otherwise).
// It snapshots the tracked fields when ov is not zero and keeps a private pre-run copy of the file (0600 in a
// fresh 0700 temp dir; it outlives End only if the process dies mid-run, as a copy to recover from).
// It never fails the run: problems come back as warnings. End must be called exactly once, on every path.
func (s *Store) Begin(ov Override) (*Run, []string) {
	r := &Run{s: s}
	var warns []string
	data, err := s.readFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.state = stateAbsent
	case err != nil:
		r.state = stateUnreadable
		return r, append(warns, fmt.Sprintf("settings: cannot read %s before the run (%v); it will not be checked or restored afterwards", s.Path, errText(err)))
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
	if !ov.IsZero() && (r.state == stateOK || r.state == stateAbsent) {
		r.tracked = true
		r.snapshot(ov)
	}
	return r, warns
}

// snapshot records lastUsedProvider and the target provider's settings.model and settings.reasoning.
// The target is the provider the CLI will write: -P, else lastUsedProvider, else "cline".
func (r *Run) snapshot(ov Override) {
	doc := r.pre
	if doc == nil {
		doc = newObject()
	}
	v, ok := doc.get("lastUsedProvider")
	r.lastUsed = field{ok, clone(v)}
	r.target = ov.Provider
	if r.target == "" {
		if s, isStr := v.(string); isStr && s != "" {
			r.target = s
		} else {
			r.target = "cline"
		}
	}
	block := providerBlock(doc, r.target)
	r.blockExisted = block != nil
	if settings := blockSettings(block); settings != nil {
		m, ok := settings.get("model")
		r.model = field{ok, clone(m)}
		re, ok := settings.get("reasoning")
		r.reasoning = field{ok, clone(re)}
	}
}

func providerBlock(doc *object, id string) *object {
	if doc == nil {
		return nil
	}
	if ps := doc.getObject("providers"); ps != nil {
		return ps.getObject(id)
	}
	return nil
}

func blockSettings(block *object) *object {
	if block == nil {
		return nil
	}
	return block.getObject("settings")
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

// End restores the tracked fields and repairs data loss. Call it exactly once, on every path (defer), while
// still holding the lock taken for the run; later calls do nothing. It returns warnings, never an error.
func (r *Run) End() []string {
	var warns []string
	r.once.Do(func() {
		warns = r.end()
		if r.backupDir != "" {
			if err := r.s.FS.RemoveAll(r.backupDir); err != nil {
				warns = append(warns, fmt.Sprintf("settings: could not remove the private pre-run copy %s: %v", r.backupDir, errText(err)))
			}
		}
	})
	return warns
}

func (r *Run) end() []string {
	s := r.s
	if r.state == stateUnreadable {
		return nil // warned in Begin
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	data, err := s.readFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if r.state == stateAbsent {
			return nil
		}
		return r.putBack("settings: %s disappeared during the run; the pre-run copy was put back")
	case err != nil:
		return []string{fmt.Sprintf("settings: cannot read %s after the run (%v); restore skipped, the file was left as it is", s.Path, errText(err))}
	}
	if r.state == stateUnparseable {
		if bytes.Equal(data, r.preBytes) {
			return nil
		}
		return r.putBack("settings: %s was not valid before the run and Cline rewrote it; the original bytes were put back (fix the file so Cline can read it)")
	}
	doc, err := parseObject(data)
	if err != nil {
		return []string{fmt.Sprintf("settings: %s is not usable after the run (%v); restore skipped, the file was left untouched", s.Path, err)}
	}

	var warns []string
	changed := false
	if r.pre != nil {
		lostProviders, lostFields := r.guard(doc)
		changed = len(lostProviders) > 0 || len(lostFields) > 0
		if len(lostProviders) > 0 {
			warns = append(warns, fmt.Sprintf("settings: Cline dropped provider(s) %s from %s during the run (it rewrites the whole file when one entry fails its schema, e.g. a baseUrl that is not a URL); they were put back", strings.Join(lostProviders, ", "), s.Path))
		}
		if len(lostFields) > 0 {
			warns = append(warns, fmt.Sprintf("settings: Cline dropped %d field(s) from %s during the run (%s); they were put back", len(lostFields), s.Path, strings.Join(firstN(lostFields, 5), ", ")))
		}
	}
	if r.tracked && r.restore(doc) {
		changed = true
	}
	if !changed {
		return warns
	}
	if err := s.writeAtomic(s.Path, doc.encode()); err != nil {
		consequence := "the entries Cline dropped were not put back"
		if r.tracked {
			consequence = "the override may still be Cline's default"
		}
		return append(warns, fmt.Sprintf("settings: could not write %s (%v); it keeps what Cline wrote, so %s", s.Path, errText(err), consequence))
	}
	return warns
}

// putBack rewrites the exact pre-run bytes.
func (r *Run) putBack(msg string) []string {
	if err := r.s.writeAtomic(r.s.Path, r.preBytes); err != nil {
		return []string{fmt.Sprintf("settings: could not put back the pre-run copy of %s (%v)", r.s.Path, errText(err))}
	}
	return []string{fmt.Sprintf(msg, r.s.Path)}
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

// restore puts each tracked field back to its pre-run state, absent included. When the target's block did not
// exist before the run, only lastUsedProvider is restored: the block Cline created is left whole.
func (r *Run) restore(doc *object) bool {
	var order []string
	if r.pre != nil {
		order = r.pre.keys
	}
	changed := restoreField(doc, "lastUsedProvider", r.lastUsed, order)
	if !r.blockExisted {
		return changed
	}
	settings := blockSettings(providerBlock(doc, r.target))
	if settings == nil {
		return changed // the guard put back everything that was there; nothing left to compare
	}
	var sorder []string
	if ps := blockSettings(providerBlock(r.pre, r.target)); ps != nil {
		sorder = ps.keys
	}
	changed = restoreField(settings, "model", r.model, sorder) || changed
	changed = restoreField(settings, "reasoning", r.reasoning, sorder) || changed
	return changed
}

func restoreField(o *object, k string, f field, order []string) bool {
	cur, ok := o.get(k)
	switch {
	case f.present && (!ok || !equal(cur, f.val)):
		o.setLike(k, clone(f.val), order)
		return true
	case !f.present && ok:
		o.del(k)
		return true
	}
	return false
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}

// errText is err's message; it exists so every warning goes through one place that never adds file content.
func errText(err error) string { return err.Error() }
