package review

import (
	"fmt"
	"strings"
)

// Range is what the prompt says of the reviewed range.
type Range struct {
	Target    string // uncommitted, base:<ref>, commit:<sha>
	Base      string
	Head      string
	Files     []FileStat
	Patch     string
	Truncated bool // the patch was cut
}

// Prompt is the task handed to Cline: what is reviewed, the focus, the caller's own words, the
// answer format (a fenced json block of findings) and the diff, which comes last so a cut diff
// cuts nothing else.
func Prompt(r Range, focus, extra string) string {
	var b strings.Builder
	b.WriteString("Review a code change in this repository. The working directory holds the reviewed state")
	switch {
	case r.Target == Uncommitted || r.Target == "":
		b.WriteString(" (the uncommitted work: staged, unstaged and untracked files)")
	case strings.HasPrefix(r.Target, Base+":"):
		fmt.Fprintf(&b, " (HEAD, reviewed against its merge base with %s)", strings.TrimPrefix(r.Target, Base+":"))
	default:
		fmt.Fprintf(&b, " (commit %s)", strings.TrimPrefix(r.Target, Commit+":"))
	}
	added, deleted := 0, 0
	for _, f := range r.Files {
		added, deleted = added+f.Added, deleted+f.Deleted
	}
	fmt.Fprintf(&b, ".\nRange: %s..%s, %d file(s), +%d -%d.\n", ShortID(r.Base), ShortID(r.Head), len(r.Files), added, deleted)
	if focus != "" {
		fmt.Fprintf(&b, "Focus of this review: %s\n", focus)
	}
	if strings.TrimSpace(extra) != "" {
		fmt.Fprintf(&b, "Instructions from the caller: %s\n", extra)
	}
	b.WriteString(`
Look for bugs, security problems, data loss, races, missing error handling and missing tests in
the change; read the changed files and whatever else you need. Do not change any file. Report
only real problems, each once, with the file path relative to the repository root and the line
in the new version of the file.

End your answer with exactly one fenced block in this format (use "findings": [] when there is
nothing to report; severity is one of critical, high, medium, low, info):
` + "```json" + `
{"summary": "one paragraph", "findings": [{"severity": "high", "file": "path/to/file.go", "line": 42, "endLine": 45, "title": "short title", "detail": "what is wrong and why", "suggestion": "how to fix it"}]}
` + "```" + `
`)
	b.WriteString("\nThe change (git diff):\n```diff\n")
	b.WriteString(r.Patch)
	if !strings.HasSuffix(r.Patch, "\n") {
		b.WriteString("\n")
	}
	b.WriteString("```\n")
	if r.Truncated {
		b.WriteString("The diff above was cut. The changed files are: ")
		names := make([]string, 0, len(r.Files))
		for _, f := range r.Files {
			names = append(names, fmt.Sprintf("%s (%s, +%d -%d)", f.Path, f.Status, f.Added, f.Deleted))
		}
		b.WriteString(strings.Join(names, ", "))
		b.WriteString(". Read the ones the diff does not show in full in the working directory.\n")
	}
	return b.String()
}

// ShortID is the first 12 characters of an object id, as reports print it.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
