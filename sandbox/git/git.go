package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// ErrNotGit means the directory is not inside a git work tree: no repository at all, a bare
// repository, or a directory inside .git. The bridge maps it to workspace_not_git.
var ErrNotGit = errors.New("not inside a git work tree")

// ErrBadRef means a ref, revision or path given to git was refused before git ran, because git
// could read it as an option (leading "-") or it contains bytes no ref may hold.
var ErrBadRef = errors.New("invalid git ref")

// maxStderr bounds GitError.Stderr; git's useful message is at the end.
const maxStderr = 4096

// GitError is a git command that ran and failed, or could not be started.
type GitError struct {
	// Args are the arguments after the runner's own -c options.
	Args []string
	// ExitCode is git's exit status, or -1 when git did not start or was killed.
	ExitCode int
	// Stderr is git's standard error, trimmed, at most the last 4 KiB.
	Stderr string
	// Err is the underlying error from os/exec or the context, if any.
	Err error
}

func (e *GitError) Error() string {
	msg := "git " + strings.Join(e.Args, " ")
	switch {
	case e.ExitCode >= 0:
		msg += fmt.Sprintf(": exit status %d", e.ExitCode)
	case e.Err != nil:
		msg += ": " + e.Err.Error()
	}
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *GitError) Unwrap() error { return e.Err }

// Git runs the git CLI. The zero value is ready to use and safe for concurrent use; set the
// fields before the first call.
//
// Every call runs `git -c core.hooksPath=/dev/null -c core.fsmonitor=false ...` with no shell,
// stdin from /dev/null, LC_ALL=C, GIT_TERMINAL_PROMPT=0 and GIT_OPTIONAL_LOCKS=0 (so `git status`
// never rewrites the user's index), and without inherited GIT_* variables that would point git at
// another repository, index or config.
type Git struct {
	// Command builds the child process; nil means exec.CommandContext. Tests and callers that
	// wrap git (for example in a container) inject their own.
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
	// Path is the git executable; empty means "git" on PATH.
	Path string
	// Env is the base environment; nil means os.Environ(). Filtered as described above.
	Env []string
}

// keptGitEnv are the GIT_* variables that describe the installation or the user's global
// choices rather than a repository, so they pass through.
var keptGitEnv = map[string]bool{
	"GIT_EXEC_PATH":                   true,
	"GIT_CEILING_DIRECTORIES":         true,
	"GIT_DISCOVERY_ACROSS_FILESYSTEM": true,
	"GIT_CONFIG_NOSYSTEM":             true,
	"GIT_CONFIG_GLOBAL":               true,
	"GIT_CONFIG_SYSTEM":               true,
	"GIT_SSL_CAINFO":                  true,
}

// Opts are the per-call knobs of run.
type Opts struct {
	Dir    string
	Env    []string  // extra KEY=value, applied last
	Stdout io.Writer // nil: collect into the returned bytes
	Stdin  io.Reader // nil: /dev/null
	// repo pins the call to a repository recorded before a run (see Repo.pin): explicit git
	// dir, common dir, work tree and index, no discovery, and no program a repository's
	// config could name. shadow, when set, is the private git dir the call runs in instead of
	// the repository's (see Repo.shadow). index is the index file it uses ("" = a path that
	// does not exist).
	Repo   *Repo
	Shadow string
	Index  string
}

func (g *Git) environ(extra []string) []string {
	base := g.Env
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+len(extra)+4)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(k)
		if strings.HasPrefix(upper, "GIT_") && !keptGitEnv[upper] {
			continue
		}
		if upper == "LC_ALL" || upper == "LANG" || upper == "LANGUAGE" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat")
	return append(env, extra...)
}

// run executes git with args in o.Dir and returns its stdout (unless o.Stdout is set).
func (g *Git) Run(ctx context.Context, o Opts, args ...string) ([]byte, error) {
	command := g.Command
	if command == nil {
		command = exec.CommandContext
	}
	path := g.Path
	if path == "" {
		path = "git"
	}
	full := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)
	env := o.Env
	if o.Repo != nil {
		full = slices.Clip(pinnedConfig)
		if o.Shadow != "" {
			full = append(full, o.Repo.settings...)
		}
		full = append(full, args...)
		env = append(o.Repo.pin(o.Shadow, o.Index), o.Env...)
		if o.Dir == "" {
			o.Dir = o.Repo.Top
		}
	}
	cmd := command(ctx, path, full...)
	cmd.Dir = o.Dir
	cmd.Env = g.environ(env)
	cmd.Stdin = o.Stdin
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	if o.Stdout != nil {
		cmd.Stdout = o.Stdout
	} else {
		cmd.Stdout = &out
	}
	stderr := &tailBuffer{max: maxStderr}
	cmd.Stderr = stderr
	err := cmd.Run()
	if err == nil {
		return out.Bytes(), nil
	}
	ge := &GitError{Args: args, ExitCode: -1, Stderr: strings.TrimSpace(stderr.String())}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		ge.Err = ctx.Err()
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		ge.ExitCode = ee.ExitCode()
	default:
		ge.Err = err
	}
	return out.Bytes(), ge
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if len(t.buf) > t.max {
		return string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}

// capWriter keeps the first max bytes and counts the rest, so a huge diff costs bounded memory.
type capWriter struct {
	max       int
	buf       []byte
	truncated bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	room := c.max - len(c.buf)
	if room >= len(p) {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		c.buf = append(c.buf, p[:room]...)
	}
	c.truncated = true
	return len(p), nil
}

// ValidateRef refuses a ref or revision that git could read as an option or that no ref name
// may contain. It is applied to every revision this package passes to git; callers that accept
// refs from users should call it first to report a clear error.
func ValidateRef(ref string) error {
	switch {
	case ref == "":
		return fmt.Errorf("%w: empty", ErrBadRef)
	case strings.HasPrefix(ref, "-"):
		return fmt.Errorf("%w %q: starts with '-'", ErrBadRef, ref)
	case len(ref) > 1024:
		return fmt.Errorf("%w: longer than 1024 bytes", ErrBadRef)
	}
	for _, r := range ref {
		if r < 0x20 || r == 0x7f || r == ' ' {
			return fmt.Errorf("%w %q: contains a space or control character", ErrBadRef, ref)
		}
	}
	return nil
}

// isObjectID reports whether s looks like a full SHA-1 or SHA-256 object id.
func IsObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// TopLevel returns the root of the work tree that contains dir. It returns an error wrapping
// ErrNotGit when dir does not exist or is not inside a work tree (including a bare repository
// and a directory inside .git).
func (g *Git) TopLevel(ctx context.Context, dir string) (string, error) {
	repo, err := g.Open(ctx, dir)
	return repo.Top, err
}

// ResolveCommit returns the full commit id that rev names in dir's repository. rev is checked
// with ValidateRef first. An unresolvable rev (including HEAD of a repository without commits)
// returns an error wrapping ErrNoCommit.
func (g *Git) ResolveCommit(ctx context.Context, dir, rev string) (string, error) {
	if err := ValidateRef(rev); err != nil {
		return "", err
	}
	out, err := g.Run(ctx, Opts{Dir: dir}, "rev-parse", "--verify", "-q", "--end-of-options", rev+"^{commit}")
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			return "", fmt.Errorf("resolve %s: %w", rev, ErrNoCommit)
		}
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	id := strings.TrimSpace(string(out))
	if !IsObjectID(id) {
		return "", fmt.Errorf("resolve %s: unexpected output %q", rev, id)
	}
	return id, nil
}

// ErrNoCommit means a revision does not name a commit; for HEAD it means the branch is unborn
// (the repository has no commits yet).
var ErrNoCommit = errors.New("no such commit")
