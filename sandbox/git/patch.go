package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A Patch is what the HTTP service returns for a run's edits of a checkout it made: a
// binary-safe git diff (`--binary --full-index`) from the checkout's state before the run to its
// state after, preceded by three header lines that `git apply` skips like an e-mail's text:
//
//	cline-mcp-patch: 1
//	base: <the commit the checkout was at>
//	bytes: <length of the diff that follows the blank line>
//
// The length lets a reader tell a patch cut short (a result truncated on the way) from a
// complete one; git apply alone would apply the first half.
type Patch struct {
	Base string
	Body []byte // the git diff, starting with "diff --git " (empty when nothing changed)
}

const patchMagic = "cline-mcp-patch: 1"

// Format renders p with its header.
func (p Patch) Format() string {
	return fmt.Sprintf("%s\nbase: %s\nbytes: %d\n\n%s", patchMagic, p.Base, len(p.Body), p.Body)
}

// ErrPatchRefused wraps every reason a patch is refused before git applies it: not a patch of
// this format, cut short, or touching what no run may touch.
var ErrPatchRefused = errors.New("patch refused")

// ParsePatch reads a patch in the format of Patch.Format, checking its header and length.
// It does not judge the diff itself: CheckPatch and ApplyPatch do.
func ParsePatch(data []byte) (Patch, error) {
	refuse := func(format string, a ...any) (Patch, error) {
		return Patch{}, fmt.Errorf("%w: %s", ErrPatchRefused, fmt.Sprintf(format, a...))
	}
	head, body, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		return refuse("no header: a patch of the service starts with %q, base and bytes lines and a blank line", patchMagic)
	}
	lines := strings.Split(string(head), "\n")
	if len(lines) != 3 || lines[0] != patchMagic {
		return refuse("the header must be exactly %q, base: and bytes: lines", patchMagic)
	}
	base, ok1 := strings.CutPrefix(lines[1], "base: ")
	n, ok2 := strings.CutPrefix(lines[2], "bytes: ")
	size, err := strconv.Atoi(n)
	if !ok1 || !ok2 || !IsObjectID(base) || err != nil || size < 0 {
		return refuse("the header's base must be a full commit id and bytes a length")
	}
	if size != len(body) {
		return refuse("the diff has %d bytes, its header says %d: it was cut short or changed on the way", len(body), size)
	}
	if size > 0 && !bytes.HasPrefix(body, []byte("diff --git ")) {
		return refuse("the diff must start with a \"diff --git\" line")
	}
	return Patch{Base: base, Body: body}, nil
}

// BinaryPatch is the diff between two snapshots of the same checkout (see Compare), binary
// files included as git binary patches and blobs named by full ids, so `git apply` reproduces
// the state after exactly. Like Compare it runs git only on the repository recorded before, and
// never lets a repository's config or attributes run a program. truncated is set, and the patch
// is empty, when the diff passes max bytes.
func (g *Git) BinaryPatch(ctx context.Context, before, after Evidence, max int) (p Patch, truncated bool, err error) {
	p.Base = before.Head
	if !IsObjectID(before.Tree) || !IsObjectID(after.Tree) {
		return p, false, fmt.Errorf("binary patch of %s: snapshot without a tree", after.Dir)
	}
	if before.Tree == after.Tree {
		return p, false, nil
	}
	o, _, done, err := before.Repo.Shadowed()
	if err != nil {
		return p, false, fmt.Errorf("binary patch of %s: %w", after.Dir, err)
	}
	defer done()
	cw := &capWriter{max: max}
	o.Stdout = cw
	if _, err := g.Run(ctx, o, diffArgs(before.Tree, after.Tree, "--patch", "--binary", "--full-index")...); err != nil {
		return p, false, fmt.Errorf("binary patch of %s: %w", after.Dir, err)
	}
	if cw.truncated {
		return p, true, nil
	}
	p.Body = cw.buf
	return p, false, nil
}
