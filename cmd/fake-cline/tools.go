package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// runCommands executes each command with the built-in interpreter and reports like
// b_run_commands_tool: an empty "started" chunk per command, then the output chunk (or an empty
// detachable chunk when there was no output).
func (s *session) runCommands(c call, toolCallID string) []obj {
	execIDs := make([]string, len(c.commands))
	update := func(i int, chunk string, detachable bool) {
		s.event(obj{{"type", "content_update"}, {"contentType", "tool"}, {"toolName", "run_commands"}, {"toolCallId", toolCallID},
			{"update", obj{{"stream", "stdout"}, {"chunk", chunk}, {"executionId", execIDs[i]}, {"detachable", detachable}, {"commandIndex", i}, {"query", c.commands[i]}}}})
	}
	for i := range c.commands {
		execIDs[i] = uuidV4()
		update(i, "", false)
	}
	var results []obj
	for i, cmd := range c.commands {
		out, ok := s.builtin(cmd)
		if out != "" {
			update(i, out, false)
		} else {
			update(i, "", true)
		}
		results = append(results, obj{{"query", cmd}, {"result", out}, {"success", ok}})
	}
	return results
}

// builtin runs one command line without a shell. Supported: echo, touch, rm, mv, cp, cat, mkdir,
// ls, pwd, true, false and git (exec'ed directly). Shell syntax is refused.
func (s *session) builtin(line string) (string, bool) {
	if strings.ContainsAny(line, "|&;<>$`") {
		return "fake-cline: shell syntax is not supported: " + line + "\n", false
	}
	args, err := splitWords(line)
	if err != nil || len(args) == 0 {
		return "fake-cline: cannot parse command: " + line + "\n", false
	}
	name, rest := args[0], args[1:]
	var paths []string
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") {
			paths = append(paths, s.abs(a))
		}
	}
	fail := func(err error) (string, bool) { return name + ": " + err.Error() + "\n", false }
	switch name {
	case "true":
		return "", true
	case "false":
		return "", false
	case "pwd":
		return s.paths.workDir + "\n", true
	case "echo":
		return strings.Join(rest, " ") + "\n", true
	case "touch":
		for _, p := range paths {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return fail(err)
			}
			_ = f.Close()
			now := time.Now()
			_ = os.Chtimes(p, now, now)
		}
		return "", true
	case "rm":
		for _, p := range paths {
			if err := os.RemoveAll(p); err != nil {
				return fail(err)
			}
		}
		return "", true
	case "mkdir":
		for _, p := range paths {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fail(err)
			}
		}
		return "", true
	case "mv", "cp":
		if len(paths) != 2 {
			return name + ": expected two paths\n", false
		}
		if name == "mv" {
			if err := os.Rename(paths[0], paths[1]); err != nil {
				return fail(err)
			}
			return "", true
		}
		data, err := os.ReadFile(paths[0])
		if err == nil {
			err = os.WriteFile(paths[1], data, 0o644)
		}
		if err != nil {
			return fail(err)
		}
		return "", true
	case "cat":
		var b strings.Builder
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				return fail(err)
			}
			b.Write(data)
		}
		return b.String(), true
	case "ls":
		dir := s.paths.workDir
		if len(paths) > 0 {
			dir = paths[0]
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return fail(err)
		}
		var b strings.Builder
		for _, e := range ents {
			b.WriteString(e.Name() + "\n")
		}
		return b.String(), true
	case "git":
		return s.git(rest)
	}
	return "sh: 1: " + name + ": not found\n", false
}

func (s *session) git(args []string) (string, bool) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return "sh: 1: git: not found\n", false
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.paths.workDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return string(out) + "git: " + err.Error() + "\n", false
		}
		return string(out), false
	}
	return string(out), true
}

// splitWords splits a command line on blanks, honouring '…' and "…" quoting and \ escapes.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' && i+1 < len(line) {
				i++
				cur.WriteByte(line[i])
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, inWord = ch, true
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
