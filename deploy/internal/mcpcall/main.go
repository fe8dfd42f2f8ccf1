// Command mcpcall is the deploy tests' caller of the HTTP service from a pod: a static binary
// with no shell, no Kubernetes client and no Docker. It prints one JSON line on stdout and
// exits 0, or prints the error on stderr and exits 1.
//
//	mcpcall list <url> <token>                  tools/list: {"tools": [names]}
//	mcpcall ask <url> <token> <cwd> <prompt>    ask_cline: the result's structuredContent
//	mcpcall get <url>                           GET without a token: {"status": n, "body": "…"}
//	mcpcall probe <url> <n>                     n GETs 200 ms apart: {"ok": k, "fail": m, "last": "ok"|"fail"}
//	mcpcall listen <addr>                       answer every HTTP request 200 "ok" (a stand-in service)
//	mcpcall load <url> <spec JSON>              concurrent calls of several tenants (load.go): {"calls": […], "wallMs": n}
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func main() {
	out, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpcall:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

func run(args []string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	switch {
	case len(args) == 2 && args[0] == "get":
		return get(ctx, args[1])
	case len(args) == 3 && args[0] == "probe":
		return probe(ctx, args[1], args[2])
	case len(args) == 2 && args[0] == "listen":
		return nil, http.ListenAndServe(args[1], http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }))
	case len(args) == 3 && args[0] == "load":
		return load(ctx, args[1], args[2])
	case len(args) == 3 && args[0] == "list":
		c, err := connect(ctx, args[1], args[2])
		if err != nil {
			return nil, err
		}
		defer c.Close()
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		var names []string
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		return map[string]any{"tools": names}, nil
	case len(args) == 5 && args[0] == "ask":
		c, err := connect(ctx, args[1], args[2])
		if err != nil {
			return nil, err
		}
		defer c.Close()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
			Arguments: map[string]any{"cwd": args[3], "prompt": args[4]}}})
		if err != nil {
			return nil, fmt.Errorf("ask_cline: %w", err)
		}
		return res.StructuredContent, nil
	}
	return nil, fmt.Errorf("usage: mcpcall list|ask|get … (got %q)", args)
}

func connect(ctx context.Context, url, token string) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "mcpcall", Version: "1"}}}); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

func get(ctx context.Context, url string) (any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return map[string]any{"status": resp.StatusCode, "body": string(b)}, err
}

// probe GETs url n times, 200 ms apart, each within a second, and counts the answers.
func probe(ctx context.Context, url, count string) (any, error) {
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("probe count %q", count)
	}
	client := &http.Client{Timeout: time.Second}
	ok, fail, last := 0, 0, ""
	for i := 0; i < n; i++ {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		if err == nil && resp.StatusCode == http.StatusOK {
			ok, last = ok+1, "ok"
		} else {
			fail, last = fail+1, "fail"
		}
	}
	return map[string]any{"ok": ok, "fail": fail, "last": last}, ctx.Err()
}
