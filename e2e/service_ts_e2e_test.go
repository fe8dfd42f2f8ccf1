//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/service"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestHTTPServiceTypeScriptSDK drives the service (Docker isolation, the fake image) with the
// official TypeScript SDK's streamable HTTP transport: without a token it cannot connect; with
// one, progress arrives and every result — the rate_limited refusal included — satisfies the
// tool's outputSchema, and the SDK reports no protocol error (progress for an answered request).
func TestHTTPServiceTypeScriptSDK(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
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
	e := prepareEnv(t)
	tokens := filepath.Join(e.root, "tokens.json")
	const token = "ts-tenant-token"
	file := `{"tenants": [{"name": "ts", "tokenSha256": ["` + service.Hash(token) + `"], "root": "` + e.work + `", "maxConcurrent": 1, "maxQueued": 0, "maxJobs": 0}]}`
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startHTTPServer(t, e, "--http-tokens", tokens, "--isolation", "docker",
		"--docker-image", mcpsession.FakeImage, "--docker-network", "none")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "http_client.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "E2E_URL="+s.url, "E2E_TOKEN="+token, "E2E_CWD="+e.work)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node http_client.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var sum struct {
		AnonymousConnected bool     `json:"anonymousConnected"`
		AnonymousError     string   `json:"anonymousError"`
		AnonymousCode      int      `json:"anonymousCode"`
		Tools              []string `json:"tools"`
		Calls              []struct {
			Label         string         `json:"label"`
			IsError       bool           `json:"isError"`
			Structured    map[string]any `json:"structured"`
			SchemaValid   bool           `json:"schemaValid"`
			SchemaError   string         `json:"schemaError"`
			SDKError      string         `json:"sdkError"`
			ProgressCount int            `json:"progressCount"`
		} `json:"calls"`
		SlowOK       bool     `json:"slowOK"`
		QuickCalls   int      `json:"quickCalls"`
		ClientErrors []string `json:"clientErrors"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	if sum.AnonymousConnected || sum.AnonymousCode != 401 {
		t.Errorf("without a token: connected %v, status %d (%q); want a 401", sum.AnonymousConnected, sum.AnonymousCode, sum.AnonymousError)
	}
	progress := 0
	for _, c := range sum.Calls {
		if c.SDKError != "" || !c.SchemaValid {
			t.Errorf("%s: SDK error %q, schema valid %v (%s)", c.Label, c.SDKError, c.SchemaValid, c.SchemaError)
		}
		wantKind := ""
		if c.Label == "refused" {
			wantKind = "rate_limited"
		}
		if kind, _ := c.Structured["kind"].(string); kind != wantKind || c.IsError != (wantKind != "") {
			t.Errorf("%s: got kind %q isError %v, want %q", c.Label, kind, c.IsError, wantKind)
		}
		progress += c.ProgressCount
	}
	if len(sum.Calls) != 12 || sum.QuickCalls != 10 || !sum.SlowOK {
		t.Errorf("got %d calls (%d quick), slow ok %v; want 12, 10, true", len(sum.Calls), sum.QuickCalls, sum.SlowOK)
	}
	if progress == 0 {
		t.Error("no progress notification reached the SDK")
	}
	if len(sum.ClientErrors) > 0 {
		t.Errorf("the SDK reported protocol errors: %q", sum.ClientErrors)
	}
	t.Logf("TypeScript SDK %s over HTTP: %d calls, %d progress notifications", sdkVersion, len(sum.Calls), progress)
}
