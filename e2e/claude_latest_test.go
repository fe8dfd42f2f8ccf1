//go:build e2e && linux

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// step is one turn of a model that finds its tools the way a model does with Claude Code's tool
// search (claudeCodeLatest): a ToolSearch call with keywords, or a call of a tool that the
// previous ToolSearch returned.
type step struct {
	search string         // ToolSearch query
	call   string         // tool name (without mcp__cline__) the last search must have found
	input  map[string]any // of call
	// args, when set, makes call's input from the tool results so far (input is then ignored).
	args func(results []block) map[string]any
	// until, when set, repeats call while it reports false for the call's result (polling).
	until func(res block) bool
}

// toolQueries are the words the model searches with for each tool when a test gives it calls
// (runOpts.calls): what a user asking for that work would say.
var toolQueries = map[string]string{
	"ask_cline":           "ask question about code",
	"apply_cline_edits":   "edit files",
	"ask_cline_workspace": "analyse repository worktree",
	"review_cline":        "review changes",
	"cline_job":           "background job status",
	"cline_sessions":      "continue conversation session",
}

// searchSteps turns calls into steps: before each call, a ToolSearch with its tool's words.
func searchSteps(calls []toolUse) []step {
	var steps []step
	for _, c := range calls {
		name := strings.TrimPrefix(c.Name, "mcp__cline__")
		q := toolQueries[name]
		if q == "" {
			q = name
		}
		steps = append(steps, step{search: q}, step{call: name, input: c.Input})
	}
	return steps
}

// searchingModel answers each request with the next step. Steps are matched to the conversation's
// tool results in order (a step with until stays current while until is false). A call whose tool
// the last search did not return, or that the request does not define, ends the turn with a text
// saying so, as a model that did not find its tool would.
func searchingModel(steps []step) func(req messagesRequest) []map[string]any {
	return func(req messagesRequest) []map[string]any {
		results := apiRequest{Body: req}.toolResults()
		i, lastSearch := 0, -1
		for k, r := range results {
			if i >= len(steps) {
				break
			}
			if steps[i].search != "" {
				lastSearch = k
			}
			if steps[i].until != nil && !steps[i].until(r) {
				time.Sleep(100 * time.Millisecond) // pacing of a poll, not a measurement
				continue
			}
			i++
		}
		if i >= len(steps) {
			return []map[string]any{{"type": "text", "text": "Done."}}
		}
		s := steps[i]
		id := fmt.Sprintf("toolu_fake_%d", len(results)+1)
		if s.search != "" {
			return []map[string]any{{"type": "tool_use", "id": id, "name": "ToolSearch", "input": map[string]any{"query": s.search}}}
		}
		name := "mcp__cline__" + s.call
		if lastSearch < 0 || !slices.Contains(results[lastSearch].references(), name) {
			return []map[string]any{{"type": "text", "text": "Not found: " + name}}
		}
		if !offers(req, name) {
			return []map[string]any{{"type": "text", "text": "Not defined: " + name}}
		}
		input := s.input
		if s.args != nil {
			input = s.args(results)
		}
		return []map[string]any{{"type": "tool_use", "id": id, "name": name, "input": input}}
	}
}

// references are the tool names of a ToolSearch result's tool_reference blocks, in its order.
func (b block) references() []string {
	var parts []struct {
		Type     string `json:"type"`
		ToolName string `json:"tool_name"`
	}
	_ = json.Unmarshal(b.Content, &parts)
	var out []string
	for _, p := range parts {
		if p.Type == "tool_reference" {
			out = append(out, p.ToolName)
		}
	}
	return out
}

// structured is a tool result's content decoded as the JSON object Claude Code gives the model
// for a result with structuredContent; nil when it is not one.
func (b block) structured() map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(b.text()), &m) != nil {
		return nil
	}
	return m
}

// callingModel is the fake model's default behaviour (fakeAnthropic.calls) as a script: the next
// call while calls remain and the request defines its tool, then "Done.".
func callingModel(calls []toolUse) func(req messagesRequest) []map[string]any {
	return func(req messagesRequest) []map[string]any {
		n := len(apiRequest{Body: req}.toolResults())
		if n < len(calls) && offers(req, calls[n].Name) {
			return []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_fake_%d", n+1), "name": calls[n].Name, "input": calls[n].Input}}
		}
		return []map[string]any{{"type": "text", "text": "Done."}}
	}
}

// holding holds script's final answers (those without a tool_use) until ready reports true, or
// 20 s passed.
func holding(script func(req messagesRequest) []map[string]any, ready func() bool) func(req messagesRequest) []map[string]any {
	return func(req messagesRequest) []map[string]any {
		content := script(req)
		if slices.ContainsFunc(content, func(c map[string]any) bool { return c["type"] == "tool_use" }) {
			return content
		}
		for end := time.Now().Add(20 * time.Second); !ready() && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		return content
	}
}
