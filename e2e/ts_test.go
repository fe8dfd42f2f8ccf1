//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// sdkVersion is the pinned @modelcontextprotocol/sdk of e2e/ts/package.json.
const sdkVersion = "1.32.2"

// npmInstall installs e2e/ts's locked dependencies unless the pinned SDK is already there.
func npmInstall(t *testing.T, dir string) {
	t.Helper()
	pkg := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	if b, err := os.ReadFile(pkg); err == nil {
		var m struct{ Version string }
		if json.Unmarshal(b, &m) == nil && m.Version == sdkVersion {
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

type tsCall struct {
	Label         string         `json:"label"`
	Tool          string         `json:"tool"`
	IsError       bool           `json:"isError"`
	Structured    map[string]any `json:"structured"`
	Text          string         `json:"text"`
	SchemaValid   bool           `json:"schemaValid"`
	SchemaError   string         `json:"schemaError"`
	SDKError      string         `json:"sdkError"`
	ProgressCount int            `json:"progressCount"`
	Progress      []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	} `json:"progress"`
}

// TestTypeScriptSDKClient drives the built server with the official TypeScript SDK: tools are
// listed with output schemas, progress arrives through onprogress, every result — failures
// included — satisfies the tool's outputSchema (the SDK validates isError results too), and the
// SDK reports no protocol error (such as progress for a request that was already answered).
func TestTypeScriptSDKClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = exec.LookPath("npm")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but node/npm are missing: %v", err)
		}
		t.Skipf("!!! SKIPPED: node/npm not installed: %v", err)
	}
	dir, err := filepath.Abs("ts")
	if err != nil {
		t.Fatal(err)
	}
	npmInstall(t, dir)
	w, args, environ := prepareWorld(t, host, worldOpts{})
	repo := w.repo("r", map[string]string{"README.md": "hello\n"})
	t.Cleanup(func() {
		if left := w.leaks(); left != "" {
			t.Errorf("leak: %s", left)
		}
	})
	argsJSON, _ := json.Marshal(args)
	envJSON, _ := json.Marshal(envMap(environ))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "E2E_SERVER="+bins.ClineMCP, "E2E_SERVER_ARGS="+string(argsJSON),
		"E2E_SERVER_ENV="+string(envJSON), "E2E_CWD="+w.work, "E2E_REPO="+repo)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var sum struct {
		Server map[string]any `json:"server"`
		Tools  []struct {
			Name            string `json:"name"`
			HasOutputSchema bool   `json:"hasOutputSchema"`
			ReadOnly        *bool  `json:"readOnly"`
		} `json:"tools"`
		Calls         []tsCall `json:"calls"`
		QuickCalls    int      `json:"quickCalls"`
		QuickProgress int      `json:"quickProgress"`
		ClientErrors  []string `json:"clientErrors"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	t.Logf("TypeScript SDK %s summary: %d tools, %d calls", sdkVersion, len(sum.Tools), len(sum.Calls))
	if sum.Server["name"] != "cline-mcp" {
		t.Errorf("got server info %v", sum.Server)
	}
	names := map[string]bool{}
	for _, tool := range sum.Tools {
		names[tool.Name] = true
		if !tool.HasOutputSchema {
			t.Errorf("%s: no outputSchema", tool.Name)
		}
	}
	for _, n := range []string{"ask_cline", "apply_cline_edits", "ask_cline_workspace"} {
		if !names[n] {
			t.Errorf("tool %s not listed (got %v)", n, names)
		}
	}
	want := map[string]struct {
		isError bool
		kind    string
	}{
		"ok-with-progress": {false, ""},
		"launch_failed":    {true, "launch_failed"},
		"non_zero_exit":    {true, "non_zero_exit"},
		"apply-ok":         {false, ""},
		"apply-not-git":    {true, "workspace_not_git"},
		"workspace-ok":     {false, ""},
	}
	if len(sum.Calls) != len(want) {
		t.Fatalf("got %d calls, want %d", len(sum.Calls), len(want))
	}
	for _, c := range sum.Calls {
		w := want[c.Label]
		if c.SDKError != "" {
			t.Errorf("%s: the SDK rejected the result: %s", c.Label, c.SDKError)
			continue
		}
		if !c.SchemaValid {
			t.Errorf("%s: structuredContent does not satisfy the outputSchema: %s", c.Label, c.SchemaError)
		}
		if c.IsError != w.isError || mcpsession.Str(c.Structured, "kind") != w.kind {
			t.Errorf("%s: got isError %v kind %q, want %v %q", c.Label, c.IsError, mcpsession.Str(c.Structured, "kind"), w.isError, w.kind)
		}
	}
	// No notification after its result, no response to an unknown id: the SDK saw no fault.
	for _, e := range sum.ClientErrors {
		t.Errorf("the TypeScript SDK reported a protocol error: %s", e)
	}
	if sum.QuickCalls != 10 || sum.QuickProgress < 10 {
		t.Errorf("got %d short calls with %d progress notifications, want 10 calls with >= 10", sum.QuickCalls, sum.QuickProgress)
	}
	first := sum.Calls[0]
	if first.ProgressCount == 0 {
		t.Errorf("onprogress never fired for a call with a progress token")
	}
	if first.Structured["text"] == "" {
		t.Errorf("no answer text: %v", first.Structured)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "ts.txt")); string(b) != "from-ts" {
		t.Errorf("apply_cline_edits via the TS client did not edit the checkout: %q", b)
	}
}

// envMap turns KEY=value entries into the object MCP client configurations take.
func envMap(environ []string) map[string]string {
	m := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
