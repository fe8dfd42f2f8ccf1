package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// acpMessage is one stored conversation message.
type acpMessage struct {
	ID      string `json:"id"`
	Role    string `json:"role"` // user | assistant
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	TS int64 `json:"ts"`
}

func (m acpMessage) text() string {
	var b strings.Builder
	for _, c := range m.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// acpSession is one conversation. Like the real CLI's it lives in
// <dataDir>/sessions/<id>/<id>.json (manifest, metadata.usage cumulative) and <id>.messages.json,
// so a later process can load it.
type acpSession struct {
	a           *acpAgent
	id, cwd     string
	model, mode string
	started     time.Time
	autoApprove bool

	mu        sync.Mutex
	noCancel  bool // the running prompt ignores session/cancel (ignore_cancel=true)
	messages  []acpMessage
	cost      float64
	inTok     int
	outTok    int
	running   bool
	cancelled bool
	cancelCh  chan struct{}
}

func (a *acpAgent) sessionDir(id string) string {
	return filepath.Join(a.paths.dataDir, "sessions", id)
}

// defaultModel is what session/new and session/load select: ACP mode does not persist the model
// per session and CLINE_MODEL counts only when it is in the provider's catalogue (docs/acp.md §1, §4).
func (a *acpAgent) defaultModel() string {
	if a.provider == "openai-compatible" {
		return "gpt-4o"
	}
	return "anthropic/claude-sonnet-5"
}

func (a *acpAgent) newSession(params json.RawMessage) (any, *rpcErr) {
	var p struct {
		Cwd string `json:"cwd"`
	}
	if json.Unmarshal(params, &p) != nil || p.Cwd == "" {
		return nil, &rpcErr{code: -32602, msg: "Invalid params"}
	}
	if a.key == "" {
		return nil, &rpcErr{code: -32000, msg: "Authentication required: Call authenticate before starting a session"}
	}
	now := time.Now()
	s := &acpSession{a: a, id: fmt.Sprintf("%d_%s_cli", now.UnixMilli(), randBase36(5)), cwd: p.Cwd, model: a.defaultModel(), mode: "act", started: now}
	if err := s.save("idle"); err != nil {
		return nil, &rpcErr{code: -32603, msg: "Internal error: " + err.Error()}
	}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	return obj{{"sessionId", s.id}, {"modes", s.modes()}, {"models", s.models()}, {"configOptions", s.configOptions()}}, nil
}

// loadSession replays the stored history as updates before it answers (docs/acp.md §4).
func (a *acpAgent) loadSession(params json.RawMessage) (any, *rpcErr) {
	var p struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
	}
	_ = json.Unmarshal(params, &p)
	notFound := &rpcErr{code: -32002, msg: "Resource not found: " + p.SessionID, data: obj{{"uri", p.SessionID}}}
	if !validID(p.SessionID) {
		return nil, notFound
	}
	b, err := os.ReadFile(filepath.Join(a.sessionDir(p.SessionID), p.SessionID+".messages.json"))
	if err != nil {
		return nil, notFound
	}
	var stored struct {
		Messages []acpMessage `json:"messages"`
	}
	_ = json.Unmarshal(b, &stored)
	s := &acpSession{a: a, id: p.SessionID, cwd: p.Cwd, model: a.defaultModel(), mode: "act", started: time.Now(), messages: stored.Messages}
	s.readUsage()
	for _, m := range s.messages {
		kind := "agent_message_chunk"
		if m.Role == "user" {
			kind = "user_message_chunk"
		}
		a.notify(s.id, obj{{"sessionUpdate", kind}, {"content", obj{{"type", "text"}, {"text", unwrapUserInput(m.text())}}}})
	}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	return obj{{"modes", s.modes()}, {"models", s.models()}, {"configOptions", s.configOptions()}}, nil
}

func validID(id string) bool {
	return id != "" && len(id) < 128 && !strings.ContainsAny(id, `/\`) && !strings.Contains(id, "..")
}

func unwrapUserInput(t string) string {
	if rest, ok := strings.CutPrefix(t, `<user_input mode="act">`); ok {
		return strings.TrimSuffix(rest, "</user_input>")
	}
	return t
}

// configure handles set_config_option (model, mode, auto_approve; provider only for the OAuth
// providers), set_model and set_mode.
func (a *acpAgent) configure(method string, params json.RawMessage) (any, *rpcErr) {
	var p struct {
		SessionID string `json:"sessionId"`
		ConfigID  string `json:"configId"`
		Value     any    `json:"value"`
		ModelID   string `json:"modelId"`
		ModeID    string `json:"modeId"`
	}
	_ = json.Unmarshal(params, &p)
	s := a.session(p.SessionID)
	if s == nil {
		return nil, &rpcErr{code: -32002, msg: "Resource not found: " + p.SessionID, data: obj{{"uri", p.SessionID}}}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "session/set_model":
		s.model = p.ModelID
		return obj{}, nil
	case "session/set_mode":
		s.mode = p.ModeID
		a.notify(s.id, obj{{"sessionUpdate", "current_mode_update"}, {"currentModeId", s.mode}})
		return obj{}, nil
	}
	v, _ := p.Value.(string)
	switch p.ConfigID {
	case "model":
		s.model = v
	case "mode":
		s.mode = v
	case "auto_approve":
		s.autoApprove, _ = p.Value.(bool)
	case "provider":
		return nil, &rpcErr{code: -32602, msg: "Unknown provider: " + v}
	default:
		return nil, &rpcErr{code: -32602, msg: "Unknown config option: " + p.ConfigID}
	}
	opts := s.configOptions()
	a.notify(s.id, obj{{"sessionUpdate", "config_option_update"}, {"configOptions", opts}})
	return obj{{"configOptions", opts}}, nil
}

func (s *acpSession) modes() obj {
	return obj{{"availableModes", []obj{
		{{"id", "plan"}, {"name", "Plan"}, {"description", "Explore the codebase and plan changes without modifying files"}},
		{{"id", "act"}, {"name", "Act"}, {"description", "Make changes to the codebase"}},
	}}, {"currentModeId", s.mode}}
}

func (s *acpSession) models() obj {
	d := s.a.defaultModel()
	return obj{{"availableModels", []obj{{{"modelId", d}, {"name", d}}}}, {"currentModelId", s.model}}
}

func (s *acpSession) configOptions() []obj {
	d := s.a.defaultModel()
	return []obj{
		{{"type", "select"}, {"id", "provider"}, {"name", "Provider"}, {"description", "The authentication provider to use"}, {"category", "model"}, {"currentValue", s.a.provider},
			{"options", []obj{{{"value", "cline"}, {"name", "Cline Usage-Billing"}}, {{"value", "cline-pass"}, {"name", "ClinePass"}}, {{"value", "openai-codex"}, {"name", "OpenAI ChatGPT Subscription"}}}}},
		{{"type", "select"}, {"id", "model"}, {"name", "Model"}, {"category", "model"}, {"currentValue", s.model}, {"options", []obj{{{"value", d}, {"name", d}}}}},
		{{"type", "select"}, {"id", "mode"}, {"name", "Session Mode"}, {"description", "Controls whether the agent can modify files"}, {"category", "mode"}, {"currentValue", s.mode},
			{"options", []obj{{{"value", "plan"}, {"name", "Plan"}, {"description", "Explore the codebase and plan changes without modifying files"}}, {{"value", "act"}, {"name", "Act"}, {"description", "Make changes to the codebase"}}}}},
		{{"type", "boolean"}, {"id", "auto_approve"}, {"name", "Auto-approve tools"}, {"description", "Automatically approve all tool calls without asking for permission"}, {"currentValue", s.autoApprove}},
	}
}

// addMessage appends to the history (caller holds mu).
func (s *acpSession) addMessage(role, text string) {
	m := acpMessage{ID: "msg_" + randBase36(8), Role: role, TS: time.Now().UnixMilli()}
	m.Content = append(m.Content, struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	s.messages = append(s.messages, m)
}

// save writes the manifest and the messages (caller holds mu, or the session is not shared yet).
func (s *acpSession) save(status string) error {
	dir := s.a.sessionDir(s.id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	usage := obj{{"inputTokens", s.inTok}, {"outputTokens", s.outTok}, {"cacheReadTokens", 0}, {"cacheWriteTokens", 0}, {"totalCost", s.cost}}
	manifest := obj{{"version", 1}, {"session_id", s.id}, {"source", "cli"}, {"pid", os.Getpid()}, {"started_at", isoTime(s.started)},
		{"exit_code", nil}, {"status", status}, {"interactive", true}, {"provider", s.a.provider}, {"model", s.model}, {"cwd", s.cwd},
		{"workspace_root", s.cwd}, {"metadata", obj{{"usage", usage}, {"aggregateUsage", usage}}},
		{"messages_path", filepath.Join(dir, s.id+".messages.json")}}
	if err := writeAtomic(filepath.Join(dir, s.id+".json"), appendJSON(nil, manifest)); err != nil {
		return err
	}
	msgs, err := json.Marshal(struct {
		Version   int          `json:"version"`
		UpdatedAt string       `json:"updated_at"`
		SessionID string       `json:"sessionId"`
		Messages  []acpMessage `json:"messages"`
	}{1, isoNow(), s.id, s.messages})
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, s.id+".messages.json"), msgs)
}

func (s *acpSession) readUsage() {
	b, err := os.ReadFile(filepath.Join(s.a.sessionDir(s.id), s.id+".json"))
	if err != nil {
		return
	}
	var m struct {
		Metadata struct {
			Usage struct {
				In   int     `json:"inputTokens"`
				Out  int     `json:"outputTokens"`
				Cost float64 `json:"totalCost"`
			} `json:"usage"`
		} `json:"metadata"`
	}
	if json.Unmarshal(b, &m) == nil {
		s.inTok, s.outTok, s.cost = m.Metadata.Usage.In, m.Metadata.Usage.Out, m.Metadata.Usage.Cost
	}
}
