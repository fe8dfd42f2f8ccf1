package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

type checkoutKey struct{}

// checkoutFrom is the checkout the service made for the call of ctx, if any.
func checkoutFrom(ctx context.Context) *Checkout {
	c, _ := ctx.Value(checkoutKey{}).(*Checkout)
	return c
}

// repoTools are the tools whose cwd a repository argument may stand for.
var repoTools = map[string]bool{"ask_cline": true, "ask_cline_workspace": true, "review_cline": true, "apply_cline_edits": true}

// checkoutGrace is how long a checkout waits for the run of an answered call to take it.
const checkoutGrace = 10 * time.Minute

// maxPlainBody bounds a request without a repository argument before it is passed on (the MCP
// layer bounds it again).
const maxPlainBody = 4 << 20

// Repositories lets a tools/call of a run tool name its repository instead of a cwd:
// "repository": {"url": …, "commit": …} or {"bundle": <base64>, "commit": …}. The argument is
// checked, the repository made into a checkout of the call (repos.Prepare, with the tenant of
// the request's context), and the call passed on to next with "cwd" naming that checkout, which
// the Runner accepts for this call only and removes when the run ends (a background job's or a
// task's too). A refused repository is
// answered as the tool's error result; next never sees the call. Every other request passes
// through unchanged.
func Repositories(repos *Repos, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || repos == nil {
			next.ServeHTTP(w, r)
			return
		}
		limit := int64(maxPlainBody) + (repos.maxBundle()/3+1)*4
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
			return
		}
		req, spec, found := repositoryCall(body)
		if !found {
			if len(body) > maxPlainBody {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		t, _ := TenantFrom(r.Context())
		co, err := prepareCall(r.Context(), repos, t, req, spec)
		if err != nil {
			answerRefusal(w, req.ID, err.Error())
			return
		}
		req.Arguments["cwd"], _ = json.Marshal(co.Dir)
		delete(req.Arguments, "repository")
		rewritten := req.body()
		// The run removes the checkout when it ends (Runner.Do). One that no run took by the
		// time the call answered was refused before it ran, or is a background job's or a
		// task's whose run is about to start: removed after a grace period unless taken.
		defer func() {
			if !co.taken.Load() {
				time.AfterFunc(checkoutGrace, func() {
					if !co.taken.Load() {
						co.Remove()
					}
				})
			}
		}()
		r.Body = io.NopCloser(bytes.NewReader(rewritten))
		r.ContentLength = int64(len(rewritten))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), checkoutKey{}, co)))
	})
}

// toolCall is a JSON-RPC tools/call request, every member kept as sent but the arguments.
type toolCall struct {
	top       map[string]json.RawMessage
	params    map[string]json.RawMessage
	ID        json.RawMessage
	Name      string
	Arguments map[string]json.RawMessage
}

// body is the request with the arguments as they are now.
func (c toolCall) body() []byte {
	c.params["arguments"], _ = json.Marshal(c.Arguments)
	c.top["params"], _ = json.Marshal(c.params)
	b, _ := json.Marshal(c.top)
	return b
}

// repositoryCall finds a tools/call whose arguments hold "repository".
func repositoryCall(body []byte) (toolCall, json.RawMessage, bool) {
	var c toolCall
	var method string
	if json.Unmarshal(body, &c.top) != nil || json.Unmarshal(c.top["method"], &method) != nil || method != "tools/call" ||
		json.Unmarshal(c.top["params"], &c.params) != nil || json.Unmarshal(c.params["arguments"], &c.Arguments) != nil ||
		c.Arguments["repository"] == nil {
		return toolCall{}, nil, false // passed on: the MCP layer answers what it does not accept
	}
	c.ID = c.top["id"]
	_ = json.Unmarshal(c.params["name"], &c.Name)
	return c, c.Arguments["repository"], true
}

// prepareCall checks the call's repository argument and makes its checkout.
func prepareCall(ctx context.Context, repos *Repos, t Tenant, req toolCall, raw json.RawMessage) (*Checkout, error) {
	if !repoTools[req.Name] {
		return nil, errors.New("repository is accepted only by ask_cline, ask_cline_workspace, review_cline and apply_cline_edits")
	}
	if _, ok := req.Arguments["cwd"]; ok {
		return nil, errors.New("repository and cwd exclude each other: the service checks the repository out itself")
	}
	if _, ok := req.Arguments["sessionId"]; ok {
		return nil, errors.New("repository cannot continue a conversation (sessionId): each call gets a fresh checkout")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var spec Repository
	if err := dec.Decode(&spec); err != nil {
		return nil, errors.New("repository must be an object {url, commit} or {bundle, commit}: " + err.Error())
	}
	if t.Name == "" {
		return nil, errors.New("the call carries no tenant: the service runs only authenticated calls")
	}
	return repos.Prepare(ctx, t, spec)
}

// answerRefusal answers a tools/call with the tool's error result.
func answerRefusal(w http.ResponseWriter, id json.RawMessage, msg string) {
	msg = "repository: " + msg
	result := map[string]any{
		"content":           []map[string]string{{"type": "text", "text": msg}},
		"isError":           true,
		"structuredContent": map[string]any{"ok": false, "warnings": []string{}, "attempts": 0, "kind": "launch_failed", "message": msg},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}
