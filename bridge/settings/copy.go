package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/afero"
)

// maxCopyFile bounds each sibling file copied into a private settings dir; settings files are a few KiB.
const maxCopyFile = 1 << 20

// Copy is a private copy of Cline's settings for one Docker run. The container gets Dir as its data dir
// (`--data-dir`/CLINE_DATA_DIR), so it only ever writes the copy; MergeBack brings wanted changes home.
type Copy struct {
	Dir          string   // fresh 0700 dir: the data dir to mount; holds settings/
	SettingsPath string   // providers.json inside Dir (Dir/settings/providers.json)
	Skipped      []string // sibling names not copied (subdirs, links, databases, locks, logs, temp or big files)

	fs       afero.Fs
	existed  bool   // the host providers.json existed when the copy was made
	snapshot []byte // its bytes then: the base MergeBack diffs the container's copy against
	once     sync.Once
	closeErr error
}

// PrivateCopy copies the settings dir into a fresh 0700 temp dir under dstRoot ("" = Store.TempDir): the
// providers.json (0600) and, when it sits in Cline's usual settings/ dir, the small regular files beside it
// (global-settings.json and the like) — never databases, locks, logs, caches or sessions, which live elsewhere
// in the data dir anyway. Hold the read lock while copying so an override run's temporary values are not
// captured. The caller owns the Copy and must Close it.
func (s *Store) PrivateCopy(dstRoot string) (*Copy, error) {
	if dstRoot == "" {
		dstRoot = s.TempDir
	}
	dir, err := afero.TempDir(s.FS, dstRoot, "cline-mcp-data-")
	if err != nil {
		return nil, fmt.Errorf("private settings copy %s: %w", s.Path, err)
	}
	c := &Copy{Dir: dir, SettingsPath: filepath.Join(dir, "settings", "providers.json"), fs: s.FS}
	if err := s.fillCopy(c); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("private settings copy %s: %w", s.Path, err)
	}
	return c, nil
}

func (s *Store) fillCopy(c *Copy) error {
	if err := s.FS.Chmod(c.Dir, 0o700); err != nil {
		return err
	}
	if err := s.FS.Mkdir(filepath.Dir(c.SettingsPath), 0o700); err != nil {
		return err
	}
	data, err := s.readFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		c.existed, c.snapshot = true, data
		if err := writePrivate(s.FS, c.SettingsPath, data); err != nil {
			return err
		}
	}
	src := filepath.Dir(s.Path)
	if filepath.Base(src) != "settings" {
		return nil // a custom CLINE_PROVIDER_SETTINGS_PATH: its neighbours are not ours to copy
	}
	entries, err := afero.ReadDir(s.FS, src)
	if err != nil {
		return nil // providers.json is what matters; without a listing we copy nothing else
	}
	for _, e := range entries {
		name := e.Name()
		if name == filepath.Base(s.Path) {
			continue
		}
		if !e.Mode().IsRegular() || e.Size() > maxCopyFile || !copyable(name) {
			c.Skipped = append(c.Skipped, name)
			continue
		}
		data, err := s.readFile(filepath.Join(src, name))
		if err == nil {
			err = writePrivate(s.FS, filepath.Join(filepath.Dir(c.SettingsPath), name), data)
		}
		if err != nil {
			c.Skipped = append(c.Skipped, name)
		}
	}
	return nil
}

// copyable rejects names that are state rather than settings.
func copyable(name string) bool {
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, ".") || strings.Contains(lower, ".tmp") {
		return false
	}
	for _, suffix := range []string{".db", ".sqlite", ".sqlite3", "-wal", "-shm", "-journal", ".lock", ".log", ".pid", ".sock"} {
		if strings.HasSuffix(lower, suffix) {
			return false
		}
	}
	return true
}

func writePrivate(fsys afero.Fs, path string, data []byte) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Close removes the copy. It is idempotent and safe to defer right after PrivateCopy.
func (c *Copy) Close() error {
	c.once.Do(func() { c.closeErr = c.fs.RemoveAll(c.Dir) })
	return c.closeErr
}

// MergeBack brings into the host file what the container changed in its copy that a user wants kept: new or
// changed credentials and tokens, new fields, new providers that carry more than a provider id and a model.
// It never merges the tracked fields (lastUsedProvider, and the target provider's settings.model and
// settings.reasoning, target = ov.Provider, else the copy-time lastUsedProvider, else "cline") and never
// deletions. A provider block's updatedAt follows only when something else in that block was merged.
// Changes made to the host file meanwhile are kept; where both sides changed the same value, the copy's
// (newer) value wins. Nothing changed → no write. The caller holds the write lock for the duration.
// It returns warnings, never an error.
func (s *Store) MergeBack(c *Copy, ov Override) []string {
	if c == nil {
		return nil
	}
	data, err := s.readFile(c.SettingsPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // nothing to merge; deletions are never merged
	case err != nil:
		return []string{fmt.Sprintf("settings: cannot read the container's settings copy (%v); nothing merged back into %s", errText(err), s.Path)}
	}
	cp, err := parseObject(data)
	if err != nil {
		return []string{fmt.Sprintf("settings: the container left an unusable settings copy (%v); nothing merged back into %s", err, s.Path)}
	}
	snap := newObject()
	if c.existed {
		if snap, err = parseObject(c.snapshot); err != nil {
			return []string{fmt.Sprintf("settings: %s was not usable when the container started (%v); nothing merged back", s.Path, err)}
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	host := newObject()
	hostData, err := s.readFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return []string{fmt.Sprintf("settings: cannot read %s (%v); nothing merged back from the container", s.Path, errText(err))}
	default:
		if host, err = parseObject(hostData); err != nil {
			return []string{fmt.Sprintf("settings: %s is not usable (%v); nothing merged back from the container, the file was left untouched", s.Path, err)}
		}
	}

	target := ov.Provider
	if target == "" {
		if lu, ok := snap.get("lastUsedProvider"); ok {
			target, _ = lu.(string)
		}
		if target == "" {
			target = "cline"
		}
	}
	var warns []string
	if lost := lostProviders(snap, cp); len(lost) > 0 {
		warns = append(warns, fmt.Sprintf("settings: Cline dropped provider(s) %s from its private copy during the run (one entry probably fails its schema); %s keeps them", strings.Join(lost, ", "), s.Path))
	}
	if merged := mergeCopy(host, snap, cp, target); len(merged) == 0 {
		return warns
	}
	if err := s.writeAtomic(s.Path, host.encode()); err != nil {
		warns = append(warns, fmt.Sprintf("settings: could not write %s (%v); credentials refreshed inside the container were not kept", s.Path, errText(err)))
	}
	return warns
}

func lostProviders(snap, cp *object) []string {
	sps, cps := snap.getObject("providers"), cp.getObject("providers")
	if sps == nil {
		return nil
	}
	var lost []string
	for _, id := range sps.keys {
		if cps == nil {
			lost = append(lost, id)
		} else if _, ok := cps.get(id); !ok {
			lost = append(lost, id)
		}
	}
	return lost
}

// mergeCopy applies the copy's changes relative to snap onto host and returns the dotted paths it changed.
func mergeCopy(host, snap, cp *object, target string) []string {
	var merged []string
	for _, k := range cp.keys {
		switch k {
		case "lastUsedProvider":
		case "providers":
			merged = append(merged, mergeProviders(host, snap, cp, target)...)
		default:
			merged = append(merged, mergeKey(host, snap, cp, k, k)...)
		}
	}
	return merged
}

func mergeProviders(host, snap, cp *object, target string) []string {
	cps := cp.getObject("providers")
	if cps == nil {
		return nil
	}
	sps := snap.getObject("providers")
	hps := host.getObject("providers")
	if hps == nil {
		if _, ok := host.get("providers"); ok {
			return nil // not an object on the host: not ours to fix
		}
		hps = newObject()
		defer func() {
			if len(hps.keys) > 0 {
				host.setLike("providers", hps, cp.keys)
			}
		}()
	}
	var merged []string
	for _, id := range cps.keys {
		cb := cps.getObject(id)
		var sb *object
		if sps != nil {
			sb = sps.getObject(id)
		}
		if cb == nil {
			merged = append(merged, mergeKey(hps, sps, cps, id, "providers."+id)...)
			continue
		}
		if id == target {
			cb, sb = withoutTracked(cb), withoutTracked(sb)
		}
		hb := hps.getObject(id)
		switch {
		case sb == nil && hb == nil: // a provider new in the copy
			if !stub(cb) {
				hps.setLike(id, clone(cb), cps.keys)
				merged = append(merged, "providers."+id)
			}
			continue
		case hb == nil: // removed from the host meanwhile: respect that
			continue
		}
		var block []string
		for _, k := range cb.keys {
			if k != "updatedAt" {
				block = append(block, mergeKey(hb, sb, cb, k, "providers."+id+"."+k)...)
			}
		}
		if len(block) > 0 {
			if _, ok := cb.get("updatedAt"); ok {
				block = append(block, mergeKey(hb, sb, cb, "updatedAt", "providers."+id+".updatedAt")...)
			}
		}
		merged = append(merged, block...)
	}
	return merged
}

// mergeKey merges cp[k] into host[k], given its value at copy time in snap (nil: absent).
func mergeKey(host, snap, cp *object, k, path string) []string {
	cv := cp.vals[k]
	var sv any
	inSnap := false
	if snap != nil {
		sv, inSnap = snap.get(k)
	}
	if inSnap && equal(sv, cv) {
		return nil // unchanged in the copy
	}
	hv, inHost := host.get(k)
	if inSnap && !inHost {
		return nil // removed from the host meanwhile
	}
	co, cIsObj := cv.(*object)
	so, sIsObj := sv.(*object)
	ho, hIsObj := hv.(*object)
	if cIsObj && hIsObj && (sIsObj || !inSnap) {
		var merged []string
		for _, kk := range co.keys {
			merged = append(merged, mergeKey(ho, so, co, kk, path+"."+kk)...)
		}
		return merged
	}
	if inHost && equal(hv, cv) {
		return nil
	}
	host.setLike(k, clone(cv), cp.keys)
	return []string{path}
}

// withoutTracked returns a copy of a provider block without settings.model and settings.reasoning.
func withoutTracked(block *object) *object {
	if block == nil {
		return nil
	}
	b := clone(block).(*object)
	if settings := b.getObject("settings"); settings != nil {
		settings.del("model")
		settings.del("reasoning")
	}
	return b
}

// stub reports a provider block that carries nothing a user would miss: no credential, no setting beyond the
// provider id, the model and reasoning. Cline writes such blocks for any -P it is given, and its invalid-entry
// wipe leaves one for "cline".
func stub(block *object) bool {
	for _, k := range block.keys {
		if !slices.Contains([]string{"settings", "updatedAt", "tokenSource"}, k) {
			return false
		}
	}
	settings := block.getObject("settings")
	if settings == nil {
		return true
	}
	for _, k := range settings.keys {
		if !slices.Contains([]string{"provider", "model", "reasoning"}, k) {
			return false
		}
	}
	return true
}
