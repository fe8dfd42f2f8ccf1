package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// postTask sends one JSON-RPC request of the Tasks extension (declared in the request's own
// capabilities, protocol 2026-07-28) with a tenant's token and returns the response.
func postTask(t *testing.T, fx *httpFixture, token, method string, params map[string]any) map[string]any {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":      map[string]any{"name": "test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, fx.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s: status %d, body not JSON: %v", method, resp.StatusCode, err)
	}
	return m
}

// TestHTTPServiceTasksPerTenant: over the HTTP service a tools/call that declares the Tasks
// extension answers with a task; another tenant's tasks/get and tasks/cancel of it are invalid
// params (an unknown task) and the task keeps running; its own tenant polls it to completion.
func TestHTTPServiceTasksPerTenant(t *testing.T) {
	fx := startHTTP(t)
	tk, _ := postTask(t, fx, alpha.token, "tools/call", map[string]any{"name": "ask_cline", "arguments": map[string]any{"prompt": "block"}})["result"].(map[string]any)
	id, _ := tk["taskId"].(string)
	if tk["resultType"] != "task" || tk["status"] != "working" || id == "" {
		t.Fatalf("tools/call declaring the extension: got %v, want a working task", tk)
	}
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		m := postTask(t, fx, beta.token, method, map[string]any{"taskId": id})
		if e, _ := m["error"].(map[string]any); e["code"] != float64(-32602) {
			t.Errorf("beta's %s of alpha's task: got %v, want error -32602", method, m)
		}
	}
	get := func() map[string]any {
		r, _ := postTask(t, fx, alpha.token, "tasks/get", map[string]any{"taskId": id})["result"].(map[string]any)
		return r
	}
	if st := get()["status"]; st != "working" {
		t.Errorf("alpha's task after beta's cancel: %v, want working (beta's cancel must not reach it)", st)
	}
	close(fx.inner.release)
	var done map[string]any
	waitFor(t, func() bool { done = get(); return done["status"] != "working" })
	res, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || res["isError"] == true {
		t.Errorf("alpha's task ended %v", done)
	}
}
