package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// toolResult is the one place where an outcome becomes MCP content: seed-compatible text plus
// structuredContent matching the tool's outputSchema. Handlers never return Go errors.
func toolResult(tool run.Tool, r run.Result) *mcp.CallToolResult {
	sc := structured(tool, r)
	var text string
	switch {
	case r.OK:
		text = successText(tool, r)
	case tool == run.ApplyClineEdits:
		var err error
		if text, err = sc.indented(); err != nil {
			text = fmt.Sprintf(`{"ok":false,"kind":%q}`, r.Kind)
		}
	default:
		text = errorText(r)
	}
	res := mcp.NewToolResultStructured(sc, text)
	res.IsError = !r.OK
	// A container run's one line on what was enforced is a block of its own, so the first block
	// stays the answer (or the seed's layout) that clients and scripts parse.
	if line := enforcedLine(r); line != "" {
		res.Content = append(res.Content, mcp.NewTextContent(line))
	}
	return res
}

// structured is the structuredContent of a result, in the order a model reads it best: clients
// such as Claude Code hand the model this JSON (not the text content) for a success. What the
// caller asked for comes first (the answer; for a failure the kind and message), then what it
// needs to act on (changed files and the diff, warnings, git evidence), then bookkeeping
// (attempts, exit code, timings, isolation) and, last, the long diagnostic tails.
func structured(tool run.Tool, r run.Result) object {
	warnings := r.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	var exitCode, signal any
	if r.ExitCode != nil {
		exitCode = *r.ExitCode
	}
	if r.Signal != nil {
		signal = *r.Signal
	}
	apply := tool == run.ApplyClineEdits
	var o object
	o.add("ok", r.OK)
	if r.OK {
		o.add("text", r.Text)
	} else {
		o.add("kind", r.Kind)
		o.add("message", r.Message)
		o.add("retryable", r.Retryable)
		if r.RetryAfterSeconds > 0 {
			o.add("retryAfterSeconds", r.RetryAfterSeconds)
		}
	}
	if apply && r.Git != nil && !r.OK {
		o.add("git", r.Git) // the evidence (and the undo command) is what a failed apply is about
	}
	if apply && (r.ChangedFiles != nil || r.OK) {
		files := r.ChangedFiles
		if files == nil {
			files = []run.ChangedFile{}
		}
		o.add("changedFiles", files)
	}
	if apply && r.Diff != nil {
		o.add("diff", *r.Diff)
		o.add("diffTruncated", r.DiffTruncated)
	}
	o.add("warnings", warnings)
	o.addConversation(r)
	if tool == run.ReviewCline && r.Review != nil {
		o.add("review", r.Review)
	}
	if (tool == run.AskClineWorkspace || tool == run.ReviewCline) && r.Worktree != nil {
		o.add("worktree", r.Worktree)
	}
	if apply && (r.HeadBefore != "" || r.OK) {
		o.add("headBefore", r.HeadBefore)
		o.add("headAfter", r.HeadAfter)
	}
	if apply && r.Git != nil && r.OK {
		o.add("git", r.Git)
	}
	if r.OK {
		if r.Model != "" {
			o.add("model", r.Model)
		}
		if r.Usage != nil {
			o.add("usage", r.Usage)
		}
	}
	o.add("attempts", r.Attempts)
	o.add("exitCode", exitCode)
	if r.OK {
		o.add("durationMs", int64(math.Round(r.Duration*1000)))
	} else {
		o.add("signal", signal)
		o.add("elapsedSeconds", math.Round(r.Duration*10)/10)
	}
	o.addIsolation(r)
	if !r.OK {
		o.add("stderrTail", r.StderrTail)
		o.add("stdoutTail", r.StdoutTail)
	}
	return o
}

// addIsolation writes where the attempts ran and what the last one had enforced.
func (o *object) addIsolation(r run.Result) {
	iso := make([]string, 0, len(r.AttemptIsolation))
	for _, i := range r.AttemptIsolation {
		iso = append(iso, string(i))
	}
	isolation := string(r.Isolation)
	if isolation == "" {
		isolation = "host"
	}
	o.add("isolation", isolation)
	o.add("attemptIsolation", iso)
	if r.Enforcement != nil {
		o.add("enforcement", r.Enforcement)
	}
}

// addConversation writes the ACP engine's session and the tool calls its policy rejected.
func (o *object) addConversation(r run.Result) {
	if r.SessionID != "" {
		o.add("sessionId", r.SessionID)
		o.add("turn", r.Turn)
	}
	if len(r.Rejected) > 0 {
		o.add("rejectedToolCalls", r.Rejected)
	}
}

// object is a JSON object that keeps its keys in insertion order (a Go map would be marshalled
// in alphabetical order, putting "attemptIsolation" before the answer).
type object []member

type member struct {
	key string
	val any
}

func (o *object) add(key string, val any) { *o = append(*o, member{key, val}) }

// MarshalJSON writes the members in order, without HTML escaping (a diff's "<" stays "<"
// where a model reads it verbatim).
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(m.key); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		if err := enc.Encode(m.val); err != nil {
			return nil, fmt.Errorf("structuredContent %s: %w", m.key, err)
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// indented is o as indented JSON without HTML escaping: the text content of a failed apply.
func (o object) indented() (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(o); err != nil {
		return "", err
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func successText(tool run.Tool, r run.Result) string {
	var b strings.Builder
	b.WriteString(r.Text)
	if tool == run.ApplyClineEdits {
		if len(r.ChangedFiles) == 0 {
			b.WriteString("\n\nNo files changed.")
		} else {
			b.WriteString("\n\nChanged files:\n")
			for _, f := range r.ChangedFiles {
				if f.OldPath != "" {
					fmt.Fprintf(&b, "  %s %s -> %s\n", f.Status, f.OldPath, f.Path)
				} else {
					fmt.Fprintf(&b, "  %s %s\n", f.Status, f.Path)
				}
			}
			if r.Diff != nil {
				b.WriteString("\nDiff:\n")
				b.WriteString(*r.Diff)
				if r.DiffTruncated {
					b.WriteString("\n[diff truncated]")
				}
			}
		}
	}
	if r.Worktree != nil && !r.Worktree.Removed && !r.Worktree.Pooled {
		fmt.Fprintf(&b, "\n\nNote: the worktree %s could not be removed.", r.Worktree.Path)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n\nWarnings:\n")
		for _, w := range r.Warnings {
			b.WriteString("- " + w + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// errorText is the seed's error layout: Kind / Message / Exit code / Attempts / tails.
func errorText(r run.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kind: %s\nMessage: %s\n", r.Kind, r.Message)
	switch {
	case r.ExitCode != nil && r.Signal != nil:
		fmt.Fprintf(&b, "Exit code: %d (signal %s)\n", *r.ExitCode, *r.Signal)
	case r.ExitCode != nil:
		fmt.Fprintf(&b, "Exit code: %d\n", *r.ExitCode)
	case r.Signal != nil:
		fmt.Fprintf(&b, "Exit code: none (terminated by %s)\n", *r.Signal)
	default:
		b.WriteString("Exit code: none\n")
	}
	fmt.Fprintf(&b, "Attempts: %d\n", r.Attempts)
	if len(r.Warnings) > 0 {
		b.WriteString("Warnings:\n")
		for _, w := range r.Warnings {
			b.WriteString("- " + w + "\n")
		}
	}
	fmt.Fprintf(&b, "Stderr tail:\n%s\nStdout tail:\n%s", orNone(r.StderrTail), orNone(r.StdoutTail))
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

// enforcedLine is the one line of text on what a container run had enforced ("" for a host
// run, whose structuredContent says "host").
func enforcedLine(r run.Result) string {
	if r.Enforcement == nil || !r.Enforcement.Isolation.Container() {
		return ""
	}
	return "Enforced: " + r.Enforcement.Summary
}
