package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// acpKinds is the CLI's tool-kind mapping (docs/acp.md §5): apply_patch is missing, so it is "other".
var acpKinds = map[string]string{"editor": "edit", "read_files": "read", "run_commands": "execute", "search_codebase": "search", "fetch_web_content": "fetch"}

func acpKind(tool string) string {
	if k, ok := acpKinds[tool]; ok {
		return k
	}
	return "other"
}

// acpTitle is "<tool>: <input JSON, cut to 60 characters with ...>" (run_commands: the command).
func acpTitle(c call) string {
	if c.tool == "run_commands" {
		return "run_commands: " + strings.Join(c.commands, "; ")
	}
	in := string(appendJSON(nil, c.input()))
	if len(in) > 60 {
		in = in[:57] + "..."
	}
	return c.tool + ": " + in
}

// runCalls plays one response's tool calls in the observed order (docs/acp.md §7): for each call a
// pending tool_call_update, the permission request and an in_progress/failed update; then for
// each call the tool_call and its completed/failed update with rawOutput. It returns a
// stopReason when the prompt ends here ("cancelled" after a cancel or five rejections in a row).
func (r *acpRun) runCalls(calls []call) string {
	base := time.Now().UnixMilli() % 100000
	r.calls++
	ids := make([]string, len(calls))
	answers := make([]string, len(calls)) // allow | reject | cancelled
	for i, c := range calls {
		ids[i] = fmt.Sprintf("call_fake_%05d%d_%d", base, r.calls, i)
		pending := obj{{"toolCallId", ids[i]}, {"title", acpTitle(c)}, {"kind", acpKind(c.tool)}, {"status", "pending"}, {"rawInput", c.input()}}
		r.s.a.notify(r.s.id, append(pending, kv{"sessionUpdate", "tool_call_update"}))
		answers[i] = r.ask(pending)
		status := "in_progress"
		if answers[i] != "allow" {
			status = "failed"
		}
		r.s.a.notify(r.s.id, obj{{"sessionUpdate", "tool_call_update"}, {"toolCallId", ids[i]}, {"status", status}})
		if answers[i] == "cancelled" {
			break
		}
	}
	stop := ""
	for i, c := range calls {
		if answers[i] == "" {
			break
		}
		r.s.a.notify(r.s.id, obj{{"sessionUpdate", "tool_call"}, {"toolCallId", ids[i]}, {"title", acpTitle(c)}, {"kind", acpKind(c.tool)}, {"status", "pending"}, {"rawInput", c.input()}})
		var out any
		status := "completed"
		switch answers[i] {
		case "allow":
			r.rejects = 0
			res, failMsg := r.tools.execTool(c, ids[i])
			out = res
			if failMsg != "" {
				out, status = obj{{"error", failMsg}}, "failed"
			}
		case "reject":
			r.rejects++
			out, status = string(appendJSON(nil, obj{{"error", rejectedText}})), "failed"
		case "cancelled":
			out, status, stop = string(appendJSON(nil, obj{{"error", cancelledText}})), "failed", "cancelled"
		}
		r.s.a.notify(r.s.id, obj{{"sessionUpdate", "tool_call_update"}, {"toolCallId", ids[i]}, {"status", status}, {"rawOutput", out}})
	}
	if stop == "" && (r.rejects >= acpRejectLimit || r.s.isCancelled()) {
		stop = "cancelled"
	}
	return stop
}

// ask sends session/request_permission (unless auto_approve is on) and returns the answer.
func (r *acpRun) ask(toolCall obj) string {
	r.s.mu.Lock()
	auto := r.s.autoApprove
	r.s.mu.Unlock()
	if auto {
		return "allow"
	}
	res := r.s.a.request("session/request_permission", obj{{"sessionId", r.s.id}, {"toolCall", toolCall}, {"options", []obj{
		{{"optionId", "allow_once"}, {"name", "Allow once"}, {"kind", "allow_once"}},
		{{"optionId", "allow_always"}, {"name", "Allow always"}, {"kind", "allow_always"}},
		{{"optionId", "reject_once"}, {"name", "Reject"}, {"kind", "reject_once"}},
	}}})
	var p struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(res, &p)
	switch {
	case p.Outcome.Outcome == "selected" && strings.HasPrefix(p.Outcome.OptionID, "allow"):
		return "allow"
	case p.Outcome.Outcome == "selected":
		return "reject"
	}
	return "cancelled"
}
