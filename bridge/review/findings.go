package review

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxFindings bounds the findings kept from one answer.
const MaxFindings = 200

var fence = regexp.MustCompile("(?s)```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)\r?\n[ \t]*```")

// Parse reads the findings block from Cline's answer: the last fenced block that decodes as an
// object with "findings". root is the reviewed work tree's path: absolute paths under it become
// relative, and a path that cannot be made a safe repository-relative one (SafePath) is dropped
// with its lines, the finding kept. It returns the findings, the summary, whether a block
// parsed, and warnings for what it had to drop or fix. An answer without a block that parses is
// not an error: the caller keeps the text as the review.
func Parse(answer, root string) (findings []Finding, summary string, ok bool, warns []string) {
	blocks := fence.FindAllStringSubmatch(answer, -1)
	for i := len(blocks) - 1; i >= 0; i-- {
		var doc struct {
			Summary  string            `json:"summary"`
			Findings []json.RawMessage `json:"findings"`
		}
		body := blocks[i][1]
		if !strings.Contains(body, `"findings"`) || json.Unmarshal([]byte(body), &doc) != nil || doc.Findings == nil {
			continue
		}
		findings, warns = normalize(doc.Findings, root)
		return findings, strings.TrimSpace(doc.Summary), true, warns
	}
	return nil, "", false, []string{"Cline's answer has no findings block that parses (a fenced json block with \"findings\"); its text is the review"}
}

// normalize decodes each finding leniently (a line given as a string, a severity in capitals)
// and drops those without a title or detail.
func normalize(raw []json.RawMessage, root string) ([]Finding, []string) {
	out := []Finding{}
	var warns []string
	for i, r := range raw {
		var f struct {
			Severity   string          `json:"severity"`
			File       string          `json:"file"`
			Line       json.RawMessage `json:"line"`
			EndLine    json.RawMessage `json:"endLine"`
			Title      string          `json:"title"`
			Detail     string          `json:"detail"`
			Suggestion string          `json:"suggestion"`
		}
		if err := json.Unmarshal(r, &f); err != nil {
			warns = append(warns, fmt.Sprintf("finding %d does not parse and was dropped: %v", i+1, err))
			continue
		}
		if f.Title == "" && f.Detail == "" {
			warns = append(warns, fmt.Sprintf("finding %d has neither title nor detail and was dropped", i+1))
			continue
		}
		if len(out) == MaxFindings {
			warns = append(warns, fmt.Sprintf("only the first %d findings are kept", MaxFindings))
			break
		}
		sev := Severity(strings.ToLower(strings.TrimSpace(f.Severity)))
		if rank(sev) == len(Severities) {
			warns = append(warns, fmt.Sprintf("finding %d has severity %q, read as info", i+1, f.Severity))
			sev = Info
		}
		if f.Title == "" {
			f.Title = firstLine(f.Detail, 80)
		}
		fd := Finding{Severity: sev, Line: number(f.Line), EndLine: number(f.EndLine), Title: f.Title, Detail: f.Detail, Suggestion: f.Suggestion}
		if fd.File, fd.PathDropped = SafePath(f.File, root); fd.PathDropped != "" {
			fd.Line, fd.EndLine = 0, 0
			warns = append(warns, fmt.Sprintf("finding %d lost its location: %s", i+1, fd.PathDropped))
		}
		out = append(out, fd)
	}
	return out, warns
}

func number(raw json.RawMessage) int {
	var n float64
	if json.Unmarshal(raw, &n) == nil && n > 0 && n < 1e9 {
		return int(n)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if i, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(s, "-", 2)[0])); err == nil && i > 0 {
			return i
		}
	}
	return 0
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(strings.SplitN(s, "\n", 2)[0])
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Check flags the findings outside the reviewed change: a file not among files, or lines in none
// of the file's changed hunks of patch. A file the (cut) patch does not show is checked by name
// only.
func Check(findings []Finding, files []FileStat, patch string) {
	hunks := Hunks(patch)
	changed := map[string]bool{}
	for _, f := range files {
		changed[f.Path] = true
	}
	for i := range findings {
		f := &findings[i]
		if !changed[f.File] {
			f.OutsideDiff = true
			continue
		}
		hs, known := hunks[f.File]
		if !known || f.Line == 0 {
			continue
		}
		end := max(f.EndLine, f.Line)
		in := false
		for _, h := range hs {
			if f.Line <= h[1] && end >= h[0] {
				in = true
				break
			}
		}
		f.OutsideDiff = !in
	}
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// Hunks lists, per file of a unified diff, the line ranges of the new version its hunks cover
// (context lines included). Deleted files have none.
func Hunks(patch string) map[string][][2]int {
	out := map[string][][2]int{}
	file := ""
	for _, line := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git "):
			file = ""
		case strings.HasPrefix(line, "+++ "):
			file = diffPath(strings.TrimPrefix(line, "+++ "))
			if file != "" {
				out[file] = [][2]int{} // known, even when it has no hunk with new lines
			}
		case file != "" && strings.HasPrefix(line, "@@ "):
			m := hunkHeader.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			start, _ := strconv.Atoi(m[1])
			n := 1
			if m[2] != "" {
				n, _ = strconv.Atoi(m[2])
			}
			out[file] = append(out[file], [2]int{start, start + max(n, 1) - 1})
		}
	}
	return out
}

// diffPath is the path of a ---/+++ header ("b/x", a quoted "b/\303\251"), "" for /dev/null.
func diffPath(s string) string {
	s = strings.TrimRight(s, "\t\r")
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, "b/")
}
