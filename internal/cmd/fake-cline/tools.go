package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// allTools is the act-mode tool list of the real CLI in its order (25 tools); disabled ones are
// left out of the AI_NoSuchToolError message.
var allTools = []string{
	"read_files", "search_codebase", "run_commands", "fetch_web_content", "editor", "ask_question",
	"spawn_agent", "team_spawn_teammate", "team_shutdown_teammate", "team_status", "team_task",
	"team_run_task", "team_cancel_run", "team_list_runs", "team_await_runs", "team_send_message",
	"team_broadcast", "team_read_mailbox", "team_mission_log", "team_cleanup", "team_create_outcome",
	"team_attach_outcome_fragment", "team_review_outcome_fragment", "team_finalize_outcome",
	"team_list_outcomes",
}

func itoa(n int) string { return strconv.Itoa(n) }

// unavailable reports whether tool is not offered to the model (disabledTools, or editor in plan mode).
func (s *session) unavailable(tool string) bool {
	return s.disabled[tool] || (s.cfg.plan && tool == "editor")
}

func (s *session) noSuchToolMessage(tool string) string {
	var avail []string
	for _, t := range allTools {
		if !s.unavailable(t) {
			avail = append(avail, t)
		}
	}
	return fmt.Sprintf("Tool call %s was rejected before execution: AI_NoSuchToolError: Model tried to call unavailable tool '%s'. Available tools: %s.", tool, tool, strings.Join(avail, ", "))
}

// runCalls executes the tool calls of one response in the recorded order: all tool_call hooks
// first, then per call content_start, (updates), tool_result hook, content_end. Unavailable
// tools get no hooks. It returns the "[tool] {json}" summaries of the failed calls.
func (s *session) runCalls(calls []call) []string {
	ids := make([]string, len(calls))
	base := time.Now().UnixMilli() % 100000
	for i, c := range calls {
		ids[i] = fmt.Sprintf("call_fake_%05d_%d", base, i)
		if !s.unavailable(c.tool) {
			s.hook("tool_call")
		}
	}
	var failures []string
	for i, c := range calls {
		id := ids[i]
		started := time.Now()
		s.event(obj{{"type", "content_start"}, {"contentType", "tool"}, {"toolName", c.tool}, {"toolCallId", id}, {"input", c.input()}})
		var output any
		var failMsg string
		switch {
		case s.unavailable(c.tool):
			failMsg = s.noSuchToolMessage(c.tool)
		case !s.autoApprove:
			failMsg = fmt.Sprintf("Tool %q requires approval in a TTY session -- NOT a tool or system failure. Clarify with user before proceeding.", c.tool)
		default:
			output, failMsg = s.execTool(c, id)
		}
		if !s.unavailable(c.tool) {
			s.hook("tool_result")
		}
		end := obj{{"type", "content_end"}, {"contentType", "tool"}, {"toolName", c.tool}, {"toolCallId", id}}
		if failMsg != "" {
			errJSON := string(appendJSON(nil, obj{{"error", failMsg}}))
			end = append(end, kv{"output", obj{{"error", failMsg}}}, kv{"error", errJSON})
			failures = append(failures, "["+c.tool+"] "+errJSON)
		} else {
			end = append(end, kv{"output", output})
		}
		end = append(end, kv{"durationMs", int(time.Since(started).Milliseconds())})
		s.event(end)
	}
	return failures
}

// execTool really performs an approved call. A non-empty failure message makes it a failed call.
func (s *session) execTool(c call, id string) (any, string) {
	switch c.tool {
	case "editor":
		res, err := editFile(c)
		if err != nil {
			return nil, err.Error()
		}
		return obj{{"query", "edit:" + c.path}, {"result", res}, {"success", true}}, ""
	case "read_files":
		var out []obj
		for _, f := range c.files {
			data, err := os.ReadFile(s.abs(f))
			if err != nil {
				out = append(out, obj{{"query", f}, {"result", "Error reading file: " + err.Error()}, {"success", false}})
				continue
			}
			out = append(out, obj{{"query", f}, {"result", numbered(string(data))}, {"success", true}})
		}
		return out, ""
	case "run_commands":
		return s.runCommands(c, id), ""
	}
	return nil, "unknown tool " + c.tool
}

func (s *session) abs(p string) string { return absFrom(s.paths.workDir, p) }

func numbered(content string) string {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strconv.Itoa(i+1) + " | " + l
	}
	return strings.Join(lines, "\n")
}

// editFile creates a file (no old_text) or replaces the first occurrence of old_text, with the
// real CLI's result strings.
func editFile(c call) (string, error) {
	newContent := []byte(c.newText)
	if c.rawBytes != nil {
		newContent = c.rawBytes
	}
	old, readErr := os.ReadFile(c.path)
	if c.oldText != nil {
		if readErr != nil {
			return "", fmt.Errorf("File not found: %s", c.path)
		}
		if !bytes.Contains(old, []byte(*c.oldText)) {
			return "", fmt.Errorf("No match found for old_text in %s", c.path)
		}
		newContent = bytes.Replace(old, []byte(*c.oldText), []byte(c.newText), 1)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(c.path, newContent, 0o644); err != nil {
		return "", err
	}
	if readErr != nil {
		return "File created successfully at: " + c.path, nil
	}
	return "Edited " + c.path + "\n```diff\n" + lineDiff(string(old), string(newContent)) + "\n```", nil
}

// lineDiff renders the changed middle block as "-N: old" / "+N: new" lines.
func lineDiff(a, b string) string {
	al := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	bl := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	p := 0
	for p < len(al) && p < len(bl) && al[p] == bl[p] {
		p++
	}
	sfx := 0
	for sfx < len(al)-p && sfx < len(bl)-p && al[len(al)-1-sfx] == bl[len(bl)-1-sfx] {
		sfx++
	}
	var out []string
	for i := p; i < len(al)-sfx; i++ {
		out = append(out, fmt.Sprintf("-%d: %s", i+1, al[i]))
	}
	for i := p; i < len(bl)-sfx; i++ {
		out = append(out, fmt.Sprintf("+%d: %s", i+1, bl[i]))
	}
	return strings.Join(out, "\n")
}
