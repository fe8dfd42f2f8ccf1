package mcpserver

import (
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
		b, err := json.MarshalIndent(sc, "", "  ")
		if err != nil {
			b = []byte(fmt.Sprintf(`{"ok":false,"kind":%q}`, r.Kind))
		}
		text = string(b)
	default:
		text = errorText(r)
	}
	res := mcp.NewToolResultStructured(sc, text)
	res.IsError = !r.OK
	return res
}

func structured(tool run.Tool, r run.Result) map[string]any {
	warnings := r.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	iso := make([]string, 0, len(r.AttemptIsolation))
	for _, i := range r.AttemptIsolation {
		iso = append(iso, string(i))
	}
	m := map[string]any{
		"ok":               r.OK,
		"warnings":         warnings,
		"attempts":         r.Attempts,
		"exitCode":         nil,
		"isolation":        string(r.Isolation),
		"attemptIsolation": iso,
	}
	if r.Isolation == "" {
		m["isolation"] = "host"
	}
	if r.ExitCode != nil {
		m["exitCode"] = *r.ExitCode
	}
	if r.OK {
		m["text"] = r.Text
		m["durationMs"] = int64(math.Round(r.Duration * 1000))
		if r.Model != "" {
			m["model"] = r.Model
		}
		if r.Usage != nil {
			m["usage"] = r.Usage
		}
	} else {
		m["kind"] = r.Kind
		m["message"] = r.Message
		m["retryable"] = r.Retryable
		m["signal"] = nil
		if r.Signal != nil {
			m["signal"] = *r.Signal
		}
		m["elapsedSeconds"] = math.Round(r.Duration*10) / 10
		m["stderrTail"] = r.StderrTail
		m["stdoutTail"] = r.StdoutTail
	}
	switch tool {
	case run.ApplyClineEdits:
		if r.Diff != nil {
			m["diff"] = *r.Diff
			m["diffTruncated"] = r.DiffTruncated
		}
		if r.ChangedFiles != nil || r.OK {
			files := r.ChangedFiles
			if files == nil {
				files = []run.ChangedFile{}
			}
			m["changedFiles"] = files
		}
		if r.HeadBefore != "" || r.OK {
			m["headBefore"] = r.HeadBefore
			m["headAfter"] = r.HeadAfter
		}
		if r.Git != nil {
			m["git"] = r.Git
		}
	case run.AskClineWorkspace:
		if r.Worktree != nil {
			m["worktree"] = r.Worktree
		}
	}
	return m
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
	if r.Worktree != nil && !r.Worktree.Removed {
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
