// Command smokeclient is the docker-compose smoke session of cline-mcp: it starts the server
// over stdio with the fake Cline CLI (host isolation inside the runner container), speaks MCP to
// it with mcp-go's client the way a user's MCP client would, checks a handful of outcomes and
// exits 0 when every check passed. It needs no network, no git and no shell, so it runs in a
// FROM-scratch image next to the static cline-mcp and fake-cline binaries.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// providers is what `cline auth` leaves behind; the fake CLI reads it like the real one.
const providers = `{"version":1,"lastUsedProvider":"openai-compatible","modes":{},"providers":{"openai-compatible":{"settings":{"provider":"openai-compatible","apiKey":"sk-smoke-123","model":"fake-model","baseUrl":"http://127.0.0.1:18080/v1"},"updatedAt":"2026-01-01T00:00:00.000Z","tokenSource":"manual"}}}`

func main() {
	server := flag.String("server", "/usr/local/bin/cline-mcp", "cline-mcp executable")
	cline := flag.String("cline", "/usr/local/bin/fake-cline", "Cline CLI (the fake) for the server")
	flag.Parse()
	if err := smoke(*server, *cline); err != nil {
		fmt.Fprintf(os.Stderr, "smoke: FAIL: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "smoke: PASS")
}

func smoke(server, cline string) error {
	home, err := os.MkdirTemp("", "smoke-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	settings := filepath.Join(home, ".cline", "data", "settings")
	work := filepath.Join(home, "work")
	for _, d := range []string{settings, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(settings, "providers.json"), []byte(providers), 0o600); err != nil {
		return err
	}
	logFile := filepath.Join(home, "server.log")
	// CLINE_MCP_TEST_*: the server's test hooks for a fast retry and frequent heartbeats
	env := []string{"HOME=" + home, "CLINE_MCP_TEST_RETRY_BACKOFF=100ms", "CLINE_MCP_TEST_PROGRESS_HEARTBEAT=500ms"}
	c, err := client.NewStdioMCPClient(server, env,
		"--cline", cline, "--isolation", "host", "--log-file", logFile)
	if err != nil {
		return fmt.Errorf("start %s: %w", server, err)
	}
	defer c.Close()
	var progress atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// NewStdioMCPClient starts the transport, but only Start wires the notification handlers.
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("client start: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "cline-mcp-smoke", Version: "1"}
	info, err := c.Initialize(ctx, init)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	step("initialized %s %s", info.ServerInfo.Name, info.ServerInfo.Version)

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	for _, want := range []string{"ask_cline", "apply_cline_edits", "ask_cline_workspace", "cline_sessions", "cline_job"} {
		if !slices.Contains(names, want) {
			return fmt.Errorf("got tools %v, want ask_cline, apply_cline_edits, ask_cline_workspace, cline_sessions and cline_job", names)
		}
	}
	step("tools: %s", strings.Join(names, ", "))

	var errs []error
	check := func(label string, args map[string]any, token any, wantKind, wantText string) {
		args["cwd"] = work
		req := mcp.CallToolRequest{}
		req.Params.Name = "ask_cline"
		req.Params.Arguments = args
		if token != nil {
			req.Params.Meta = &mcp.Meta{ProgressToken: token}
		}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
			return
		}
		var sc map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &sc)
		kind, _ := sc["kind"].(string)
		text, _ := sc["text"].(string)
		switch {
		case wantKind == "" && (res.IsError || !strings.Contains(text, wantText)):
			errs = append(errs, fmt.Errorf("%s: got isError=%v kind=%q text=%q, want a text with %q", label, res.IsError, kind, text, wantText))
		case wantKind != "" && (!res.IsError || kind != wantKind):
			errs = append(errs, fmt.Errorf("%s: got isError=%v kind=%q, want kind %q", label, res.IsError, kind, wantKind))
		default:
			step("%s: ok (kind %q, attempts %v)", label, kind, sc["attempts"])
		}
	}
	check("answer", map[string]any{"prompt": "Reply with PONG"}, nil, "", "PONG")
	check("progress", map[string]any{"prompt": "go fake:slow?seconds=1&interval_ms=200"}, "smoke-1", "", "tick 5")
	check("provider error", map[string]any{"prompt": "go fake:http_401"}, nil, "non_zero_exit", "")
	check("transient retried", map[string]any{"prompt": "go fake:http_503"}, nil, "transient_provider_error", "")
	check("invalid input", map[string]any{"prompt": "hi", "timeoutSeconds": 999}, nil, "launch_failed", "")
	if progress.Load() == 0 {
		errs = append(errs, errors.New("no progress notification for a call with a progress token"))
	}
	if len(errs) > 0 {
		if b, err := os.ReadFile(logFile); err == nil {
			fmt.Fprintf(os.Stderr, "server log:\n%s\n", b)
		}
	}
	return errors.Join(errs...)
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "smoke: "+format+"\n", args...)
}
