package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/spf13/afero"
)

// maxCopyFile bounds each sibling file copied into a private settings dir; settings files are a few KiB.
const maxCopyFile = 1 << 20

// copiedSiblings are the files beside providers.json a container gets: settings without secrets
// the CLI reads. Everything else there (cline_mcp_settings.json, which holds MCP servers' keys
// and headers, databases, locks, logs) stays on the host.
var copiedSiblings = []string{"global-settings.json"}

// copiedTopLevel are the top-level keys of providers.json a container gets besides the one
// provider block it may use: none of them holds a secret.
var copiedTopLevel = []string{"version", "lastUsedProvider", "modes"}

// Copy is a private copy of Cline's settings for one Docker run. The container gets Dir as its data dir
// (`--data-dir`/CLINE_DATA_DIR), so it only ever writes the copy; MergeAllowed brings refreshed
// credentials home, and nothing else.
type Copy struct {
	Dir          string   // fresh 0700 dir: the data dir to mount; holds settings/
	SettingsPath string   // providers.json inside Dir (Dir/settings/providers.json)
	Skipped      []string // sibling names not copied (anything but copiedSiblings)
	// Target is the only provider whose block the copy holds: the override's provider, else
	// the default (lastUsedProvider, else "cline").
	Target string
	// Warnings say why the copy holds less than it should (an unusable host file).
	Warnings []string

	fs       afero.Fs
	existed  bool   // a providers.json was written into the copy
	snapshot []byte // its bytes: the base MergeAllowed diffs the container's copy against
	once     sync.Once
	closeErr error
}

// PrivateCopy makes the least-privilege copy of the settings dir for a run with override ov, in a
// fresh 0700 temp dir under dstRoot ("" = Store.TempDir): a providers.json (0600) holding only the
// block of the provider the run may use (Target) plus the non-secret top-level settings — no other
// provider's key — and, when it sits in Cline's usual settings/ dir, the non-secret settings files
// beside it (copiedSiblings). Hold the read lock while copying so an override run's temporary
// values are not captured. The caller owns the Copy and must Close it.
func (s *Store) PrivateCopy(dstRoot string, ov Override) (*Copy, error) {
	if dstRoot == "" {
		dstRoot = s.TempDir
	}
	dir, err := afero.TempDir(s.FS, dstRoot, "cline-mcp-data-")
	if err != nil {
		return nil, fmt.Errorf("private settings copy %s: %w", s.Path, err)
	}
	c := &Copy{Dir: dir, SettingsPath: filepath.Join(dir, "settings", "providers.json"), fs: s.FS}
	if err := s.fillCopy(c, ov); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("private settings copy %s: %w", s.Path, err)
	}
	return c, nil
}

func (s *Store) fillCopy(c *Copy, ov Override) error {
	if err := s.FS.Chmod(c.Dir, 0o700); err != nil {
		return err
	}
	if err := s.FS.Mkdir(filepath.Dir(c.SettingsPath), 0o700); err != nil {
		return err
	}
	c.Target = ov.Provider
	data, err := s.readFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		doc, err := parseObject(data)
		if err != nil {
			c.Warnings = append(c.Warnings, fmt.Sprintf("settings: %s is not usable (%v); the container starts without it", s.Path, err))
			break
		}
		if c.Target == "" {
			c.Target, _ = doc.vals["lastUsedProvider"].(string)
		}
		if c.Target == "" {
			c.Target = "cline"
		}
		c.snapshot = leastPrivilege(doc, c.Target).encode()
		c.existed = true
		if err := writePrivate(s.FS, c.SettingsPath, c.snapshot); err != nil {
			return err
		}
	}
	if c.Target == "" {
		c.Target = "cline"
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
		if !e.Mode().IsRegular() || e.Size() > maxCopyFile || !slices.Contains(copiedSiblings, name) {
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

// leastPrivilege is doc with only the copiedTopLevel keys and the target's provider block.
func leastPrivilege(doc *object, target string) *object {
	out := newObject()
	for _, k := range doc.keys {
		switch {
		case slices.Contains(copiedTopLevel, k):
			out.set(k, clone(doc.vals[k]))
		case k == "providers":
			ps := newObject()
			if all := doc.getObject("providers"); all != nil {
				if block, ok := all.get(target); ok {
					ps.set(target, clone(block))
				}
			}
			out.set(k, ps)
		}
	}
	return out
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
