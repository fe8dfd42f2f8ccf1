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
// the CLI reads — global settings, and models.json (custom providers' model catalogs, which the
// CLI reads from the directory of its providers.json). Everything else there
// (cline_mcp_settings.json, which holds MCP servers' keys and headers, databases, locks, logs)
// stays on the host.
var copiedSiblings = []string{"global-settings.json", "models.json"}

// credentialHome names providers whose credentials live in another provider's block: cline-pass
// signs in through cline's account (seen on the real CLI 3.0.65), so a container that may use
// cline-pass gets both blocks.
var credentialHome = map[string]string{"cline-pass": "cline"}

// hostSiblings are the files beside providers.json a host override run gets in its copy: the CLI
// reads models.json (custom providers' model catalogs) from the directory of the providers.json it
// uses, wherever that is. Global settings, MCP settings, sessions and databases are found through
// the data dir, which a host run keeps, so they are not copied.
var hostSiblings = []string{"models.json"}

// copiedTopLevel are the top-level keys of providers.json a container gets besides the one
// provider block it may use: none of them holds a secret.
var copiedTopLevel = []string{"version", "lastUsedProvider", "modes"}

// Copy is a private copy of Cline's settings for one run. A container gets Dir as its data dir
// (`--data-dir`/CLINE_DATA_DIR); a host override run gets SettingsPath as CLINE_PROVIDER_SETTINGS_PATH
// (the real CLI reads, refreshes and writes that file and leaves the user's alone: contract
// TestCLIHonoursProviderSettingsPath). Either way the run only ever writes the copy; MergeAllowed
// brings refreshed credentials home, and nothing else.
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
	host     bool   // made by HostCopy
	existed  bool   // a providers.json was written into the copy
	snapshot []byte // its bytes: the base MergeAllowed diffs the run's copy against
	secrets  []string
	once     sync.Once
	closeErr error
}

// PrivateCopy makes the least-privilege copy of the settings dir for a run with override ov, in a
// fresh 0700 temp dir under dstRoot ("" = Store.TempDir): a providers.json (0600) holding only the
// block of the provider the run may use (Target) plus the non-secret top-level settings — no other
// provider's key — and, when it sits in Cline's usual settings/ dir, the non-secret settings files
// beside it (copiedSiblings). The caller owns the Copy and must Close it.
func (s *Store) PrivateCopy(dstRoot string, ov Override) (*Copy, error) {
	return s.newCopy(dstRoot, ov, false)
}

// HostCopy makes the copy a host run with a provider/model override works on, in a fresh 0700
// temp dir under dstRoot ("" = Store.TempDir): the whole providers.json (0600) — a host run can read
// the user's file anyway, and the CLI may need another provider's block (cline-pass signs in through
// cline's) — plus models.json when it sits beside it (hostSiblings). The user's file never carries
// the override, so a crash cannot leave it behind, and other runs never see it. The copy holds
// keys: the caller owns it and must Close it.
func (s *Store) HostCopy(dstRoot string, ov Override) (*Copy, error) {
	return s.newCopy(dstRoot, ov, true)
}

func (s *Store) newCopy(dstRoot string, ov Override, full bool) (*Copy, error) {
	if dstRoot == "" {
		dstRoot = s.TempDir
	}
	dir, err := afero.TempDir(s.FS, dstRoot, "cline-mcp-data-")
	if err != nil {
		return nil, fmt.Errorf("private settings copy %s: %w", s.Path, err)
	}
	c := &Copy{Dir: dir, SettingsPath: filepath.Join(dir, "settings", "providers.json"), fs: s.FS, host: full}
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
			c.Warnings = append(c.Warnings, fmt.Sprintf("settings: %s is not usable (%v); %s starts without it", s.Path, err, c.runName()))
			break
		}
		if c.Target == "" {
			c.Target, _ = doc.vals["lastUsedProvider"].(string)
		}
		if c.Target == "" {
			c.Target = "cline"
		}
		if c.host {
			c.snapshot = doc.encode()
		} else {
			c.snapshot = leastPrivilege(doc, c.Target).encode()
		}
		c.existed = true
		if err := writePrivate(s.FS, c.SettingsPath, c.snapshot); err != nil {
			return err
		}
	}
	if c.Target == "" {
		c.Target = "cline"
	}
	src := filepath.Dir(s.Path)
	siblings := hostSiblings
	if !c.host {
		siblings = copiedSiblings
		if filepath.Base(src) != "settings" {
			return nil // a custom CLINE_PROVIDER_SETTINGS_PATH: its neighbours are not ours to copy
		}
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
		if !e.Mode().IsRegular() || e.Size() > maxCopyFile || !slices.Contains(siblings, name) {
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

// leastPrivilege is doc with only the copiedTopLevel keys and the blocks of the target provider
// and of the provider that holds its credentials (credentialHome), in the host file's order, each
// without its refresh token (containerDrops).
func leastPrivilege(doc *object, target string) *object {
	keep := []string{target}
	if home, ok := credentialHome[target]; ok {
		keep = append(keep, home)
	}
	out := newObject()
	for _, k := range doc.keys {
		switch {
		case slices.Contains(copiedTopLevel, k):
			out.set(k, clone(doc.vals[k]))
		case k == "providers":
			ps := newObject()
			if all := doc.getObject("providers"); all != nil {
				for _, id := range all.keys {
					if slices.Contains(keep, id) {
						ps.set(id, withoutRefresh(clone(all.vals[id])))
					}
				}
			}
			out.set(k, ps)
		}
	}
	return out
}

// containerDrops are the credentials a container's copy never holds: the refresh token (the host
// refreshes before the run instead: Store.EnsureFresh) and the OpenID id token, which the CLI only
// reads when it refreshes. The access token stays: it is what the run calls its provider with.
var containerDrops = [][]string{{"settings", "auth", "refreshToken"}, {"settings", "auth", "metadata", "idToken"}}

// withoutRefresh removes containerDrops from a provider block (a clone: it changes v in place).
func withoutRefresh(v any) any {
	block, ok := v.(*object)
	if !ok {
		return v
	}
	for _, path := range containerDrops {
		o := block
		for _, k := range path[:len(path)-1] {
			if o = o.getObject(k); o == nil {
				break
			}
		}
		if o != nil {
			o.del(path[len(path)-1])
		}
	}
	return block
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

// Secrets are the credential values MergeAllowed read from the copy after the run (whatever the run
// left there, kept or not): values the call must redact from everything it returns. Call it after
// MergeAllowed.
func (c *Copy) Secrets() []string { return c.secrets }

// runName names who wrote the copy, for warnings.
func (c *Copy) runName() string {
	if c.host {
		return "the run"
	}
	return "the container"
}

// Close removes the copy. It is idempotent and safe to defer right after PrivateCopy.
func (c *Copy) Close() error {
	c.once.Do(func() { c.closeErr = c.fs.RemoveAll(c.Dir) })
	return c.closeErr
}
