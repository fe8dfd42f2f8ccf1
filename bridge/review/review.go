// Package review is review_cline's own logic, free of processes and git: what a review target
// names, the prompt that hands Cline the change, and the findings read back from its answer and
// checked against the change. bridge/run resolves the target with git and runs Cline; this
// package imports nothing of ours.
package review

import (
	"fmt"
	"regexp"
	"strings"
)

// Severity is how much a finding matters, most first.
type Severity string

const (
	Critical Severity = "critical"
	High     Severity = "high"
	Medium   Severity = "medium"
	Low      Severity = "low"
	Info     Severity = "info"
)

// Severities lists every Severity, most severe first (the output schema's enum).
var Severities = []Severity{Critical, High, Medium, Low, Info}

// AtLeast reports whether s is as severe as min or more.
func (s Severity) AtLeast(min Severity) bool { return rank(s) <= rank(min) }

func rank(s Severity) int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return len(Severities)
}

// Finding is one problem the review found.
type Finding struct {
	Severity   Severity `json:"severity"`
	File       string   `json:"file"`
	Line       int      `json:"line,omitempty"`
	EndLine    int      `json:"endLine,omitempty"`
	Title      string   `json:"title"`
	Detail     string   `json:"detail"`
	Suggestion string   `json:"suggestion,omitempty"`
	// OutsideDiff is set when the file is not among the reviewed files, or the lines are in
	// none of its changed hunks: the finding is kept, but it is not about the change itself.
	OutsideDiff bool `json:"outsideDiff,omitempty"`
	// PathDropped says why the path Cline gave was dropped (SafePath: outside the repository,
	// a URI, ...): the finding keeps its text but has no location. The path is not repeated.
	PathDropped string `json:"pathDropped,omitempty"`
}

// FileStat is one file of the reviewed range.
type FileStat struct {
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"`
	Status  string `json:"status"` // A, M, D, R, T, C
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary,omitempty"`
}

// Report is a review's structured result: the range it covers, and what Cline found.
type Report struct {
	// Target is what was reviewed: uncommitted, base:<ref> or commit:<sha>.
	Target string `json:"target"`
	// Base and Head are the commits of the range; for uncommitted work Head is a snapshot
	// commit of the working tree (no ref points to it).
	Base           string     `json:"base"`
	Head           string     `json:"head"`
	Files          []FileStat `json:"files"`
	FilesTruncated bool       `json:"filesTruncated,omitempty"`
	// DiffTruncated: the diff handed to Cline was cut; it read the rest of the files itself.
	DiffTruncated bool `json:"diffTruncated,omitempty"`
	// Parsed is set when Cline's answer held a findings block that parsed; otherwise Findings
	// is empty and the answer's text is the review.
	Parsed   bool      `json:"parsed"`
	Summary  string    `json:"summary,omitempty"`
	Findings []Finding `json:"findings"`
}

// Target kinds (ParseTarget).
const (
	Uncommitted = "uncommitted"
	Base        = "base"
	Commit      = "commit"
)

var (
	refPattern = regexp.MustCompile(`^[A-Za-z0-9._/@{}~^+-]{1,200}$`)
	shaPattern = regexp.MustCompile(`^[0-9a-fA-F]{4,64}$`)
)

// TargetRule is the rule of the target argument, for the schema and the validator's message.
const TargetRule = "uncommitted (default), base:<ref> or commit:<sha>"

// ParseTarget splits a target into its kind and revision; "" is uncommitted.
func ParseTarget(s string) (kind, rev string, err error) {
	switch {
	case s == "" || s == Uncommitted:
		return Uncommitted, "", nil
	case strings.HasPrefix(s, Base+":"):
		rev = strings.TrimPrefix(s, Base+":")
		if !refPattern.MatchString(rev) || strings.HasPrefix(rev, "-") || strings.Contains(rev, "..") {
			return "", "", fmt.Errorf("target base:<ref> needs a ref name (letters, digits and ._/@{}~^+-, not starting with -), got %q", rev)
		}
		return Base, rev, nil
	case strings.HasPrefix(s, Commit+":"):
		rev = strings.TrimPrefix(s, Commit+":")
		if !shaPattern.MatchString(rev) {
			return "", "", fmt.Errorf("target commit:<sha> needs 4 to 64 hex digits, got %q", rev)
		}
		return Commit, rev, nil
	}
	return "", "", fmt.Errorf("target must be %s, got %q", TargetRule, s)
}
