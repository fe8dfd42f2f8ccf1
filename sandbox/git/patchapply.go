package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrBaseMismatch is a patch made for another commit than the checkout's HEAD.
var ErrBaseMismatch = errors.New("the checkout is not at the patch's base commit")

// ErrPatchDoesNotApply is a patch git would not apply to the checkout as it is.
var ErrPatchDoesNotApply = errors.New("the patch does not apply")

// PatchedFile is one path a patch changes, as git apply counts it.
type PatchedFile struct {
	Path    string
	OldPath string // the path before a rename or copy, else ""
	Binary  bool
	Added   int
	Deleted int
}

// ApplyOptions choose how ApplyPatch applies.
type ApplyOptions struct {
	// Unstaged applies to the work tree only (`git apply`); otherwise the index too
	// (`git apply --index`), which also requires the index to match the work tree for every
	// path the patch touches.
	Unstaged bool
	// CheckOnly stops after every check, changing nothing.
	CheckOnly bool
}

// ApplyPatch applies p, a patch from a run (hostile input), to the work tree of dir after
// checking that HEAD is p.Base; that the diff's headers and git's own list of its paths name only
// regular files inside the work tree (no absolute path, no "..", no .git, no .gitmodules, no
// symbolic link or gitlink mode, no path through a symbolic link on disk); and that git would
// apply all of it. Nothing changes unless every check passes; git applies all or nothing.
func (g *Git) ApplyPatch(ctx context.Context, dir string, p Patch, opts ApplyOptions) ([]PatchedFile, error) {
	repo, err := g.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	head, err := g.ResolveCommit(ctx, repo.Top, "HEAD")
	if err != nil {
		return nil, err
	}
	if head != p.Base {
		return nil, fmt.Errorf("%w: HEAD is %s, the patch was made on %s (check that commit out, or ask again on this one)", ErrBaseMismatch, head, p.Base)
	}
	if err := CheckPatch(p.Body); err != nil {
		return nil, err
	}
	if len(p.Body) == 0 {
		return nil, nil
	}
	o := Opts{Dir: repo.Top}
	run := func(extra ...string) ([]byte, error) {
		o.Stdin = bytes.NewReader(p.Body)
		args := append([]string{"apply", "-p1", "--whitespace=nowarn"}, extra...)
		if !opts.Unstaged {
			args = append(args, "--index")
		}
		return g.Run(ctx, o, args...)
	}
	out, err := run("--numstat", "-z")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrPatchRefused, gitStderr(err))
	}
	files, err := parseApplyNumstat(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPatchRefused, err)
	}
	for _, f := range files {
		for _, path := range []string{f.Path, f.OldPath} {
			if path == "" {
				continue
			}
			if err := checkPatchPath(path); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrPatchRefused, err)
			}
			if err := noSymlinkOnDisk(repo.Top, path); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrPatchRefused, err)
			}
		}
	}
	if _, err := run("--check"); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrPatchDoesNotApply, gitStderr(err))
	}
	if opts.CheckOnly {
		return files, nil
	}
	if _, err := run(); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrPatchDoesNotApply, gitStderr(err))
	}
	return files, nil
}

func gitStderr(err error) string {
	var ge *GitError
	if errors.As(err, &ge) && ge.Stderr != "" {
		return ge.Stderr
	}
	return err.Error()
}

// CheckPatch scans the headers of every "diff --git" section of a diff: each path a ---, +++,
// rename or copy line names must pass checkPatchPath, and each mode must be a regular file's
// (100644 or 100755): a symbolic link (120000) or a gitlink (160000) is refused.
func CheckPatch(body []byte) error {
	refuse := func(line int, format string, a ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrPatchRefused, line, fmt.Sprintf(format, a...))
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), len(body)+1)
	inHeader, n := false, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(line, "diff --git ") {
			inHeader = true
			continue
		}
		if !inHeader {
			continue
		}
		if strings.HasPrefix(line, "@@ ") || line == "GIT binary patch" || strings.HasPrefix(line, "Binary files ") {
			inHeader = false // hunks follow until the next "diff --git"
			continue
		}
		for _, prefix := range []string{"old mode ", "new mode ", "new file mode ", "deleted file mode "} {
			if mode, ok := strings.CutPrefix(line, prefix); ok && mode != "100644" && mode != "100755" {
				return refuse(n, "mode %s is not a regular file's: symbolic links and submodules are not applied", mode)
			}
		}
		if rest, ok := strings.CutPrefix(line, "index "); ok {
			if _, mode, ok := strings.Cut(rest, " "); ok && mode != "100644" && mode != "100755" {
				return refuse(n, "mode %s is not a regular file's: symbolic links and submodules are not applied", mode)
			}
		}
		if err := checkHeaderPath(line); err != nil {
			return refuse(n, "%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrPatchRefused, err)
	}
	return nil
}

// checkPatchPath accepts a relative path of slash-separated components inside the work tree
// that is not, and does not pass through, anything git keeps for itself: no empty, "." or ".."
// component, no ".git" in any case or with the trailing dots and spaces, or short name, that
// Windows and macOS file systems fold onto it, no .gitmodules (a submodule a later
// `git submodule update` would fetch), no backslash and no control character.
func checkPatchPath(path string) error {
	if path == "" || strings.HasPrefix(path, "/") {
		return fmt.Errorf("path %q is empty or absolute", path)
	}
	if strings.ContainsFunc(path, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return fmt.Errorf("path %q holds a control character or a backslash", path)
	}
	for _, c := range strings.Split(path, "/") {
		folded := strings.TrimRight(strings.ToLower(c), ". ")
		switch {
		case c == "" || c == "." || c == "..":
			return fmt.Errorf("path %q has an empty, . or .. component", path)
		case folded == ".git" || folded == "git~1":
			return fmt.Errorf("path %q reaches into .git", path)
		case folded == ".gitmodules" || strings.HasPrefix(folded, "gitmod~"):
			return fmt.Errorf("path %q changes .gitmodules: submodules are not applied", path)
		}
	}
	return nil
}

// noSymlinkOnDisk refuses a path whose existing leading components, or itself, are symbolic
// links in the work tree at top (git apply refuses most of these too; this says so clearly).
func noSymlinkOnDisk(top, path string) error {
	cur := top
	for _, c := range strings.Split(path, "/") {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("path %q: %v", path, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("path %q goes through the symbolic link %q in the checkout", path, strings.TrimPrefix(cur, top+string(filepath.Separator)))
		}
	}
	return nil
}

// parseApplyNumstat reads `git apply --numstat -z`: "added\tdeleted\tpath\0", or for a rename
// or copy "added\tdeleted\t\0old\0new\0"; "-\t-\t" for a binary file.
func parseApplyNumstat(out []byte) ([]PatchedFile, error) {
	var files []PatchedFile
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		rec := fields[i]
		if rec == "" {
			continue
		}
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("unexpected git apply --numstat record %q", rec)
		}
		f := PatchedFile{Binary: parts[0] == "-"}
		fmt.Sscan(parts[0], &f.Added)
		fmt.Sscan(parts[1], &f.Deleted)
		if parts[2] != "" {
			f.Path = parts[2]
		} else if i+2 < len(fields) {
			f.OldPath, f.Path = fields[i+1], fields[i+2]
			i += 2
		} else {
			return nil, fmt.Errorf("unexpected git apply --numstat rename record")
		}
		files = append(files, f)
	}
	return files, nil
}

// unquotePath undoes git's C-style quoting of a path in a diff header ("a/caf\303\251" with
// core.quotePath), or returns the path as it is when it is not quoted.
func unquotePath(raw string) (string, error) {
	if !strings.HasPrefix(raw, `"`) {
		return raw, nil
	}
	if len(raw) < 2 || !strings.HasSuffix(raw, `"`) {
		return "", fmt.Errorf("badly quoted path %s", raw)
	}
	var b strings.Builder
	s := raw[1 : len(raw)-1]
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i >= len(s) {
			return "", fmt.Errorf("badly quoted path %s", raw)
		}
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'a', 'b', 'f', 'r', 'v':
			b.WriteByte(map[byte]byte{'a': 7, 'b': 8, 'f': 12, 'r': 13, 'v': 11}[c])
		case '"', '\\':
			b.WriteByte(c)
		default:
			if c < '0' || c > '3' || i+2 >= len(s) || s[i+1] < '0' || s[i+1] > '7' || s[i+2] < '0' || s[i+2] > '7' {
				return "", fmt.Errorf("badly quoted path %s", raw)
			}
			b.WriteByte((c-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
			i += 2
		}
	}
	return b.String(), nil
}

// checkHeaderPath checks the path of a ---, +++, rename or copy header line (other lines
// pass): /dev/null on the ---/+++ lines, else a/<path> or b/<path> there, <path> on the others.
func checkHeaderPath(line string) error {
	for _, prefix := range []string{"--- ", "+++ ", "rename from ", "rename to ", "copy from ", "copy to "} {
		raw, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		if raw == "/dev/null" && (prefix == "--- " || prefix == "+++ ") {
			return nil
		}
		path, err := unquotePath(raw)
		if err != nil {
			return err
		}
		if prefix == "--- " || prefix == "+++ " {
			rest, okA := strings.CutPrefix(path, "a/")
			if !okA {
				rest, okA = strings.CutPrefix(path, "b/")
			}
			if !okA {
				return fmt.Errorf("path %q has no a/ or b/ prefix", path)
			}
			path = rest
		}
		return checkPatchPath(path)
	}
	return nil
}
