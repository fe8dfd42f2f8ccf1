// Package repocheck checks the repository as a whole: every relative link and #anchor of its
// Markdown resolves inside the repository, nothing cites a document the repository does not
// hold, no file cites an outside issue tracker, and no tracked file is a build output (over 1 MiB,
// a binary executable, or executable without being an allow-listed script). `make lint` runs it first; `make test` runs it too.
package repocheck

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the top level of the repository this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// markdownFiles lists the tracked and untracked, not ignored, Markdown files under root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if _, err := os.Stat(filepath.Join(root, f)); f != "" && err == nil {
			files = append(files, f)
		}
	}
	return files
}

var (
	fenceRe   = regexp.MustCompile("^ {0,3}(```|~~~)")
	headingRe = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$`)
	linkRe    = regexp.MustCompile(`\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRe  = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	htmlIDRe  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	schemeRe  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	inlineRe  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	dropRe    = regexp.MustCompile(`[^\p{L}\p{N}\p{M} _-]`)
)

// page is one Markdown file: its text outside code (code blanked, offsets kept) and its anchors.
type page struct {
	prose   string
	anchors map[string]bool
}

func parsePage(src string) page {
	lines := strings.Split(src, "\n")
	inFence := false
	var headings []string
	for i, l := range lines {
		if fenceRe.MatchString(l) {
			inFence = !inFence
			lines[i] = ""
			continue
		}
		if inFence {
			lines[i] = ""
			continue
		}
		if m := headingRe.FindStringSubmatch(l); m != nil {
			headings = append(headings, m[1])
		}
	}
	p := page{prose: blankCodeSpans(strings.Join(lines, "\n")), anchors: map[string]bool{}}
	seen := map[string]int{}
	for _, h := range headings {
		s := slug(h)
		if n := seen[s]; n > 0 {
			p.anchors[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			p.anchors[s] = true
		}
		seen[s]++
	}
	for _, m := range htmlIDRe.FindAllStringSubmatch(src, -1) {
		p.anchors[m[1]] = true
	}
	return p
}

// blankCodeSpans replaces every inline code span (a run of n backticks up to the next run of
// exactly n, within a paragraph) with spaces, keeping newlines and offsets.
func blankCodeSpans(s string) string {
	b := []byte(s)
	run := func(i int) int { // length of the backtick run at i
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		return n
	}
	for i := 0; i < len(b); {
		n := run(i)
		if n == 0 {
			i++
			continue
		}
		end := -1
		for j := i + n; j < len(b); {
			if b[j] == '\n' && j+1 < len(b) && b[j+1] == '\n' {
				break // a paragraph ends: no closing run
			}
			if m := run(j); m > 0 {
				if m == n {
					end = j + m
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end
	}
	return string(b)
}

// slug is GitHub's anchor of a heading: the rendered text, lower-cased, without punctuation,
// spaces turned into hyphens.
func slug(heading string) string {
	s := inlineRe.ReplaceAllString(heading, "$1")
	s = strings.NewReplacer("`", "", "*", "").Replace(s)
	s = dropRe.ReplaceAllString(strings.ToLower(s), "")
	return strings.ReplaceAll(s, " ", "-")
}

// TestMarkdownLinks: every relative link of every Markdown file points at a file or directory
// inside the repository, and every #anchor at a heading (or an HTML anchor) of its page.
func TestMarkdownLinks(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files; the test would prove little", len(files))
	}
	pages := map[string]page{}
	load := func(rel string) (page, bool) {
		if p, ok := pages[rel]; ok {
			return p, true
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return page{}, false
		}
		pages[rel] = parsePage(string(b))
		return pages[rel], true
	}
	links := 0
	for _, f := range files {
		p, _ := load(f)
		var targets []string
		for _, m := range linkRe.FindAllStringSubmatch(p.prose, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range refDefRe.FindAllStringSubmatch(p.prose, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if schemeRe.MatchString(target) {
				continue
			}
			links++
			if err := checkLink(root, f, target, load); err != nil {
				t.Errorf("%s: link %q: %v", f, target, err)
			}
		}
	}
	if links < 50 {
		t.Errorf("checked only %d relative links; the parser may have missed some", links)
	}
}

func checkLink(root, from, target string, load func(string) (page, bool)) error {
	path, frag, _ := strings.Cut(target, "#")
	path, err := url.PathUnescape(path)
	if err != nil {
		return err
	}
	rel := from
	if path != "" {
		rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), filepath.FromSlash(path))))
		if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(path) {
			return fmt.Errorf("points outside the repository")
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return fmt.Errorf("no such file or directory: %s", rel)
		}
	}
	if frag == "" {
		return nil
	}
	if !strings.HasSuffix(rel, ".md") {
		if regexp.MustCompile(`^L\d+(-L\d+)?$`).MatchString(frag) {
			return nil
		}
		return fmt.Errorf("#%s on a file that is not Markdown", frag)
	}
	p, ok := load(rel)
	if !ok {
		return fmt.Errorf("cannot read %s", rel)
	}
	if !p.anchors[frag] {
		return fmt.Errorf("%s has no heading with anchor #%s", rel, frag)
	}
	return nil
}

// TestSlug pins the anchor rules the link check relies on to GitHub's.
func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Exit codes and the CLI's own retries":             "exit-codes-and-the-clis-own-retries",
		"providers.json":                                   "providersjson",
		"apply_cline_edits":                                "apply_cline_edits",
		"Which engine: contexts, remote engines, Podman":   "which-engine-contexts-remote-engines-podman",
		"Setting up on Linux, macOS and Windows":           "setting-up-on-linux-macos-and-windows",
		"`--workspace-pool` and [the pool](docs/pool.md)":  "--workspace-pool-and-the-pool",
		"Bind or copy: engines that cannot see your files": "bind-or-copy-engines-that-cannot-see-your-files",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
	p := parsePage("# A\n\n```\n# not a heading\n```\n\n## A\n\nsee `[x](nowhere.md)` and [y](#a-1)\n")
	if !p.anchors["a"] || !p.anchors["a-1"] || p.anchors["not-a-heading"] {
		t.Errorf("anchors %v, want a and a-1 only", p.anchors)
	}
	if strings.Contains(p.prose, "nowhere.md") || !strings.Contains(p.prose, "(#a-1)") {
		t.Errorf("code spans not blanked or links lost: %q", p.prose)
	}
}

// outsideRefs are names of documents that live beside the repository, not in it: the design
// notes and findings this project was built from. What the code relies on of them is in
// docs/cline-cli.md; a reference to them leaves a newcomer who cloned the repository stranded.
var outsideRefs = []string{`\.\./shared/`, `shared/(cline-cli|seed|STYLE)`, `FINDINGS(\.md| §)`, `DESIGN\.md`, `ACP\.md`, `seed/0`}

// TestNoReferenceOutsideRepository: no tracked file cites those documents.
func TestNoReferenceOutsideRepository(t *testing.T) {
	root := repoRoot(t)
	args := []string{"grep", "-n", "-I", "-E", strings.Join(outsideRefs, "|"), "--", ".", ":!internal/repocheck/"}
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err == nil {
		t.Errorf("references to documents outside the repository (state the fact in docs/ and cite that):\n%s", out)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("git grep: %v", err)
	}
}
