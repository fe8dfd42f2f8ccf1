package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
)

// The tool policy of an analysis run (ask_cline, ask_cline_workspace, review_cline) is an allow-list,
// cline.AnalysisTools: the CLI offers the model only the tools that read the workspace (and, in a
// container, run_commands). The CLI has no allow-list of its own, so the policy is built from
// what it does have, without touching the user's files:
//
//   - global settings (CLINE_GLOBAL_SETTINGS_PATH → a generated copy of the user's): every tool
//     the pinned CLI knows but the allowed ones in disabledTools, web_search switched off;
//   - MCP servers (CLINE_MCP_SETTINGS_PATH → a generated file without servers): none starts;
//   - on the host, the Cline directory (CLINE_DIR → a private directory that links only the
//     user's rules and workflows, CLINE_DATA_DIR → the user's data dir, so settings and keys are
//     the same): the user's hooks, plugins, configured agents and skills stay off;
//   - code the CLI runs from places no setting moves: the analysed repository's own hooks and
//     plugins (cline.WorkspaceCodeDirs, in every directory the CLI may take as its workspace:
//     see workspaceDirs) make a host analysis fail with launch_failed (they would run on the
//     user's machine); ~/Documents/Cline/{Hooks,Plugins} and ~/.agents/plugins
//     (cline.UserCodeDirs) are reported in a warning, as doctor does;
//   - a CLI of another version than cline.PolicyCLIVersion is reported in a warning: it may offer
//     tools the pinned list does not know;
//   - after the run, any successful call of a tool outside the allow-list is reported
//     (cline.Classify).

// errWorkspaceCode is wrapped by hostPolicy when the workspace carries hooks or plugins.
var errWorkspaceCode = errors.New("the workspace configures Cline hooks or plugins")

// hostPolicy writes the policy files of a host analysis attempt into a fresh directory under the
// call's private dir and returns the environment that points the CLI at them.
func (p *prep) hostPolicy(a *attempt) (map[string]string, error) {
	if found := p.workspaceCode(); len(found) > 0 {
		return nil, fmt.Errorf("%w in %s, which the Cline CLI would run on this machine during the analysis (its workspace is the repository's top or, when git cannot read the repository, the run's directory), and the CLI cannot switch them off: %s; run the call with \"isolation\": \"docker\" (they then run inside the container) or remove them",
			errWorkspaceCode, p.dir, strings.Join(found, ", "))
	}
	if !p.warned.userCode {
		p.warned.userCode = true
		if found := existingCode("", cline.UserCodeDirs(p.r.cfg.Home)); len(found) > 0 {
			a.warn(fmt.Sprintf("your Cline hooks or plugins in %s ran during this analysis: the CLI reads them from your home directory and has no setting that switches them off", strings.Join(found, ", ")))
		}
	}
	dir := filepath.Join(p.private, fmt.Sprintf("policy-%d", a.n))
	if p.keepAs(a.iso) != "" {
		own, err := p.ownDir(a)
		if err != nil {
			return nil, fmt.Errorf("write the tool policy: %w", err)
		}
		dir = own
	}
	clineDir := filepath.Join(dir, "cline-dir")
	if err := os.MkdirAll(clineDir, 0o700); err != nil {
		return nil, fmt.Errorf("write the tool policy: %w", err)
	}
	global := filepath.Join(dir, "global-settings.json")
	if err := p.writeGlobalSettings(global, p.r.globalSettingsPath(), cline.AnalysisTools(false), a); err != nil {
		return nil, err
	}
	mcp := filepath.Join(dir, "cline_mcp_settings.json")
	if err := os.WriteFile(mcp, []byte(cline.EmptyMCPSettings), 0o600); err != nil {
		return nil, fmt.Errorf("write the tool policy: %w", err)
	}
	getenv := envLookup(p.r.cfg.Env)
	userClineDir := getenv("CLINE_DIR")
	if userClineDir == "" {
		userClineDir = filepath.Join(p.r.cfg.Home, ".cline")
	}
	for _, name := range cline.ClineDirText {
		src := filepath.Join(userClineDir, name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := os.Symlink(src, filepath.Join(clineDir, name)); err != nil && !p.warned.textLink {
			p.warned.textLink = true
			a.warn(fmt.Sprintf("your global Cline %s (%s) do not apply to this analysis run: %v", name, src, err))
		}
	}
	return map[string]string{
		"CLINE_GLOBAL_SETTINGS_PATH": global,
		"CLINE_MCP_SETTINGS_PATH":    mcp,
		"CLINE_DIR":                  clineDir,
		"CLINE_DATA_DIR":             settings.DataDir(getenv, p.r.cfg.Home),
	}, nil
}

// dockerPolicy writes the policy files of a container analysis attempt into the settings copy's
// settings dir (mounted at the same path) and returns the environment for them. The container's
// HOME is an empty tmpfs, so its Cline directory holds no hooks or plugins of the user; the
// repository's own run inside the container, which a warning says (a plugin's tools are offered).
func (p *prep) dockerPolicy(settingsDir string, a *attempt) (map[string]string, error) {
	if found := p.workspaceCode(); len(found) > 0 && !p.warned.userCode {
		p.warned.userCode = true
		a.warn(fmt.Sprintf("the repository's Cline hooks or plugins (%s) ran inside the container: the CLI cannot switch them off, and a plugin's tools are offered beside the analysis allow-list", strings.Join(found, ", ")))
	}
	global := filepath.Join(settingsDir, "global-settings.json")
	if err := p.writeGlobalSettings(global, global, cline.AnalysisTools(true), a); err != nil {
		return nil, err
	}
	mcp := filepath.Join(settingsDir, "cline_mcp_settings.json")
	if err := os.WriteFile(mcp, []byte(cline.EmptyMCPSettings), 0o600); err != nil {
		return nil, fmt.Errorf("write the tool policy: %w", err)
	}
	return map[string]string{"CLINE_GLOBAL_SETTINGS_PATH": global, "CLINE_MCP_SETTINGS_PATH": mcp}, nil
}

// workspaceDirs are the directories the CLI may take as the workspace whose hooks and plugins it
// runs. Cline 3.0.65 takes what `git rev-parse --show-toplevel` answers in the run's directory,
// else the run's directory itself (verified on the real CLI: when git refuses the repository —
// owned by another user, "dubious ownership" — or is missing, the hooks and plugins of a
// subdirectory run). Which of the two the CLI's git picks depends on what git makes of the
// repository, so every candidate counts: the run's directory; the recorded top level, if any;
// and, going up from the run's directory, every directory with a .git entry up to and including
// the first one that git can use (a .git file, or a .git directory with a HEAD), since git skips
// a .git it cannot use and looks further up. A few Lstat calls instead of running git (which
// costs milliseconds per call); only a lookup, nothing in the repository is read or trusted.
func (p *prep) workspaceDirs() []string {
	dirs := []string{p.dir}
	add := func(d string) {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if rec := p.space.record(); rec != nil {
		add(rec.Top)
	}
	for d := p.dir; ; {
		if fi, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			add(d)
			if usableGitEntry(filepath.Join(d, ".git"), fi) {
				break
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return dirs
}

// usableGitEntry: a .git that stops git's upward search (roughly git's own test): a regular
// file (the gitfile of a linked worktree or submodule) or a directory holding HEAD.
func usableGitEntry(path string, fi os.FileInfo) bool {
	if fi.Mode().IsRegular() {
		return true
	}
	if !fi.IsDir() {
		return false
	}
	_, err := os.Lstat(filepath.Join(path, "HEAD"))
	return err == nil
}

// workspaceCode lists the code directories (cline.WorkspaceCodeDirs) of every directory the CLI
// may take as its workspace that exist and hold at least one entry.
func (p *prep) workspaceCode() []string {
	var found []string
	for _, d := range p.workspaceDirs() {
		found = append(found, existingCode(d, cline.WorkspaceCodeDirs)...)
	}
	return found
}

// gitTop is the nearest of dir and its parents that holds a .git entry (a directory, or the file
// of a linked worktree), else dir. A few Lstat calls instead of running git (which costs
// milliseconds per call); only a lookup, nothing in the repository is read or trusted.
func gitTop(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// existingCode lists the directories of dirs (relative to root, or absolute with root "") that
// exist and hold at least one entry. A symbolic link counts without being followed: a container
// attempt may have planted it in the workspace, and the host lists no directory of its choosing
// (the CLI may follow it to code, so it is reported).
func existingCode(root string, dirs []string) []string {
	var found []string
	for _, d := range dirs {
		p := d
		if root != "" {
			p = filepath.Join(root, d)
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			found = append(found, p)
		} else if ents, err := os.ReadDir(p); err == nil && len(ents) > 0 {
			found = append(found, p)
		}
	}
	return found
}

// writeGlobalSettings writes the user's global settings plus the analysis policy of allowed to
// dst (0600).
func (p *prep) writeGlobalSettings(dst, userPath string, allowed []string, a *attempt) error {
	user, err := os.ReadFile(userPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		a.warn(fmt.Sprintf("could not read your Cline global settings (%s): %v; using only the bridge's tool policy", userPath, err))
	}
	merged, err := cline.GlobalSettings(user, allowed)
	if err != nil {
		return fmt.Errorf("build the read-only tool policy: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("write the tool policy: %w", err)
	}
	if err := os.WriteFile(dst, merged, 0o600); err != nil {
		return fmt.Errorf("write the tool policy: %w", err)
	}
	return nil
}

// versionWarning says when the host CLI at path is not the version the tool policy was written
// for. The version comes from the npm package beside the executable (…/@cline/cli-<os>-<arch>/
// bin/cline → package.json), read once per executable and modification time; an executable
// without one (a build of its own) gets no warning here (doctor runs `cline version`).
func (r *Runner) versionWarning(path string) string {
	v := r.versions.of(path)
	if v == "" || v == cline.PolicyCLIVersion {
		return ""
	}
	return fmt.Sprintf("Cline CLI %s is not %s, the version cline-mcp's analysis tool policy was written for: tools it added may be offered to this analysis run (cline-mcp reports any such tool the run calls); update cline-mcp or install cline@%s",
		v, cline.PolicyCLIVersion, cline.PolicyCLIVersion)
}

// versionCache remembers the package version of each executable, keyed by path, size and time.
type versionCache struct {
	mu sync.Mutex
	m  map[string]cachedVersion
}

type cachedVersion struct {
	stamp   string
	version string
}

func (c *versionCache) of(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(real)
	if err != nil {
		return ""
	}
	stamp := fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[real]; ok && v.stamp == stamp {
		return v.version
	}
	v := packageVersion(real)
	if c.m == nil {
		c.m = map[string]cachedVersion{}
	}
	c.m[real] = cachedVersion{stamp: stamp, version: v}
	return v
}

// packageVersion reads the version of the npm package an executable belongs to (its directory's
// parent's package.json, named @cline/cli-* or cline), or "".
func packageVersion(exe string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(exe)), "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &pkg) != nil || (pkg.Name != "cline" && !strings.HasPrefix(pkg.Name, "@cline/cli-")) {
		return ""
	}
	return pkg.Version
}
