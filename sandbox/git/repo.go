package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Repo is where a work tree's git data lives, recorded by Open BEFORE a run. It is the pre-run
// record of the trust boundary: every git command this package runs after a run (Inspect,
// Compare, Touched, Remove) uses exactly these paths — as GIT_DIR, GIT_COMMON_DIR,
// GIT_WORK_TREE and a private GIT_INDEX_FILE — and never asks git (or a `.git` file, a
// `gitdir` or `commondir` pointer) where the repository is, because a run can rewrite all of
// those. Callers that mount the work tree into a container use the same record.
type Repo struct {
	Top       string // work tree root
	GitDir    string // this work tree's git dir (".git", or <common>/worktrees/<name> for a linked worktree)
	CommonDir string // the git dir shared by all work trees of the repository
	Index     string // this work tree's index file
	// ObjectFormat is "sha1" or "sha256".
	ObjectFormat string

	// settings are the data-only config values (see recordedKeys) in effect before the run, as
	// `-c key=value` arguments; exclude and attributes are the repository's info/exclude and
	// info/attributes then. Snapshots replay them in a shadow git dir instead of reading the
	// repository's config, which a run may have changed.
	settings   []string
	exclude    []byte
	attributes []byte
	// filters is set when the config defines a clean, smudge or process filter program (Git
	// LFS, for example), sparse when core.sparseCheckout is on: a pooled worktree could not be
	// moved between commits the way `git worktree add` checks them out (see Manager.Acquire).
	filters, sparse bool
}

// recordedKeys are the config keys a snapshot honours: they change how files are compared and
// stored, never what runs. Anything else in the user's config (filters, textconv, hooks,
// fsmonitor, credential helpers, includes) never reaches a snapshot's git.
var recordedKeys = regexp.MustCompile(`^(core\.(ignorecase|precomposeunicode|protectntfs|protecthfs|filemode|symlinks|autocrlf|eol|safecrlf|checkstat|trustctime|excludesfile|attributesfile|bigfilethreshold|longpaths)|diff\.(renamelimit|algorithm|indentheuristic))$`)

// poolKeys are the config keys Open notes (Repo.filters, Repo.sparse) but never replays.
var poolKeys = regexp.MustCompile(`^(filter\..+\.(clean|smudge|process)|core\.sparsecheckout)$`)

// Open resolves dir's repository and records it. It asks git where the repository is, so call
// it only on a checkout no run has touched yet: before the run, never after. It returns an
// error wrapping ErrNotGit when dir does not exist or is not inside a work tree (including a
// bare repository and a directory inside .git).
func (g *Git) Open(ctx context.Context, dir string) (Repo, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return Repo{}, fmt.Errorf("%w: %s: %v", ErrNotGit, dir, err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	out, err := g.Run(ctx, Opts{Dir: dir}, "rev-parse", "--is-inside-work-tree", "--show-toplevel",
		"--absolute-git-dir", "--git-common-dir", "--git-path", "index", "--show-object-format")
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > 0 && lines[0] == "false" {
		return Repo{}, fmt.Errorf("%w: %s", ErrNotGit, dir)
	}
	if err != nil {
		var ge *GitError
		// git has no exit code of its own for "no repository"; its message is the only signal,
		// and this is the one place where it is read.
		if errors.As(err, &ge) && ge.ExitCode == 128 && strings.Contains(ge.Stderr, "not a git repository") {
			return Repo{}, fmt.Errorf("%w: %s", ErrNotGit, dir)
		}
		return Repo{}, fmt.Errorf("git repository of %s: %w", dir, err)
	}
	if len(lines) != 6 || lines[0] != "true" {
		return Repo{}, fmt.Errorf("git repository of %s: unexpected rev-parse output %q", dir, out)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(dir, p)
	}
	r := Repo{Top: filepath.Clean(lines[1]), GitDir: abs(lines[2]), CommonDir: abs(lines[3]), Index: abs(lines[4]),
		ObjectFormat: lines[5]}
	if r.ObjectFormat != "sha1" && r.ObjectFormat != "sha256" {
		return Repo{}, fmt.Errorf("git repository of %s: unknown object format %q", dir, r.ObjectFormat)
	}
	out, err = g.Run(ctx, Opts{Dir: dir}, "config", "-z", "--get-regexp", recordedKeys.String()+"|"+poolKeys.String())
	if err != nil && !ExitCode(err, 1) { // 1 = none set
		return Repo{}, fmt.Errorf("git config of %s: %w", dir, err)
	}
	home, _ := os.UserHomeDir()
	for _, rec := range strings.Split(string(out), "\x00") {
		k, v, hasValue := strings.Cut(rec, "\n")
		if poolKeys.MatchString(k) {
			if k == "core.sparsecheckout" {
				r.sparse = !hasValue || configBool(v) // a key without "=" is true
			} else if v != "" {
				r.filters = true
			}
			continue
		}
		if !recordedKeys.MatchString(k) {
			continue
		}
		if rest, ok := strings.CutPrefix(v, "~/"); ok && home != "" && strings.HasSuffix(k, "file") {
			v = filepath.Join(home, rest) // git expands ~ in these paths when it reads them
		}
		r.settings = append(r.settings, "-c", k+"="+v)
	}
	r.exclude, _ = ReadSmall(filepath.Join(r.CommonDir, "info", "exclude"))
	r.attributes, _ = ReadSmall(filepath.Join(r.CommonDir, "info", "attributes"))
	return r, nil
}

// configBool reads a git boolean value: "false", "no", "off", "0" and "" are false.
func configBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "no", "off", "0", "":
		return false
	}
	return true
}

// shadow creates, under tmp, the git dir a snapshot runs in: HEAD, empty refs, a config of
// our own (just the repository format), and the recorded info/exclude and info/attributes.
// Objects come from the repository (GIT_OBJECT_DIRECTORY), work tree and index are passed
// explicitly, and system and global config are switched off, so the recorded settings are all
// the config git sees.
func (r *Repo) shadow(tmp string) (string, error) {
	dir := filepath.Join(tmp, "git")
	config := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
	if r.ObjectFormat == "sha256" {
		config = "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n\tobjectFormat = sha256\n"
	}
	for _, d := range []string{"refs", "objects", "info"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return "", err
		}
	}
	for name, data := range map[string][]byte{
		"HEAD": []byte("ref: refs/heads/main\n"), "config": []byte(config),
		"info/exclude": r.exclude, "info/attributes": r.attributes,
	} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), data, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// pinnedConfig is prepended to every command pinned to a Repo. It turns off everything a
// repository's config (which a run may have written: in host mode Cline can edit .git/config)
// could make git execute or contact: hooks, fsmonitor, credential helpers, every transport
// (a lazy fetch of a partial clone would run the remote's upload-pack), and index extensions
// that hand work to other programs. Filters, textconv and external diff drivers are kept out
// by the commands themselves (hash-object --no-filters, diff --no-ext-diff --no-textconv).
var pinnedConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.splitIndex=false",
	"-c", "index.sparse=false",
	"-c", "credential.helper=",
	"-c", "core.alternateRefsCommand=",
	"-c", "protocol.allow=never",
	"-c", "protocol.file.allow=never",
	"-c", "protocol.ext.allow=never",
	"-c", "protocol.ssh.allow=never",
	"-c", "protocol.git.allow=never",
	"-c", "protocol.http.allow=never",
	"-c", "protocol.https.allow=never",
	"-c", "core.pager=cat",
}

// pin is the environment that binds git to r: explicit dirs (shadow, when set, instead of the
// repository's own git dir), work tree and index, a ceiling above the work tree, no replace
// refs (a run could add refs/replace/* to disguise objects) and no transport at all.
func (r *Repo) pin(shadow, index string) []string {
	if index == "" {
		index = filepath.Join(os.TempDir(), "cline-mcp-no-index-"+randomHex(8))
	}
	gitDir, commonDir := r.GitDir, r.CommonDir
	var env []string
	if shadow != "" {
		gitDir, commonDir = shadow, shadow
		env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}
	}
	return append(env,
		"GIT_DIR="+gitDir,
		"GIT_COMMON_DIR="+commonDir,
		"GIT_WORK_TREE="+r.Top,
		"GIT_INDEX_FILE="+index,
		"GIT_OBJECT_DIRECTORY="+filepath.Join(r.CommonDir, "objects"),
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(r.Top),
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_ALLOW_PROTOCOL=none",
		"GIT_PROTOCOL_FROM_USER=0",
	)
}

// Git object modes.
const (
	modeFile    = "100644"
	modeExec    = "100755"
	modeSymlink = "120000"
	modeGitlink = "160000"
)

// zeroOID is the null object id of r's object format.
func (r *Repo) zeroOID() string {
	if r.ObjectFormat == "sha256" {
		return strings.Repeat("0", 64)
	}
	return strings.Repeat("0", 40)
}

// AttributesUseFilters reports whether any attributes git would apply to a checkout of commit
// in src name a filter: info/attributes, the attributes file of the config or the default one,
// and the commit's .gitattributes files (read with git grep in the recorded repository, before
// the run).
func (g *Git) AttributesUseFilters(ctx context.Context, src Repo, commit string) (bool, error) {
	const needle = "filter="
	if bytes.Contains(src.attributes, []byte(needle)) {
		return true, nil
	}
	files := []string{}
	for i := 0; i+1 < len(src.settings); i += 2 {
		if v, ok := strings.CutPrefix(src.settings[i+1], "core.attributesfile="); ok {
			files = append(files, v)
		}
	}
	if len(files) == 0 {
		if dir, err := os.UserConfigDir(); err == nil {
			files = append(files, filepath.Join(dir, "git", "attributes"))
		}
	}
	for _, f := range files {
		if b, err := ReadSmall(f); err == nil && bytes.Contains(b, []byte(needle)) {
			return true, nil
		}
	}
	if !IsObjectID(commit) { // git grep (2.39) takes no --end-of-options before a revision
		return false, fmt.Errorf("%w %q: not an object id", ErrBadRef, commit)
	}
	_, err := g.Run(ctx, Opts{Repo: &src}, "grep", "-q", "--no-textconv", "-F", "-e", needle, commit, "--",
		":(glob)**/.gitattributes")
	if ExitCode(err, 1) {
		return false, nil
	}
	return err == nil, err
}

// PoolBlocker says why a worktree of this repository cannot be moved between commits the way
// `git worktree add` checks them out ("" when it can): core.sparseCheckout is on, or the config
// defines a filter program (see AttributesUseFilters for whether the attributes use one).
func (r Repo) PoolBlocker() (sparse, filters bool) { return r.sparse, r.filters }

// Adopt takes over src's recorded config (the data-only settings, info/exclude and
// info/attributes): a pooled worktree's record keeps the repository's, whatever a run wrote.
func (r *Repo) Adopt(src Repo) {
	r.settings, r.exclude, r.attributes = src.settings, src.exclude, src.attributes
}
