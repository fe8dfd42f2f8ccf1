package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// loadSpec is what `mcpcall load <url> <spec>` runs: for each token, perToken calls of tool
// with args at once; a call refused rate_limited is retried after its retryAfterSeconds (at
// least 1 s), counted, until it gets its answer.
type loadSpec struct {
	Tokens   []string       `json:"tokens"`
	PerToken int            `json:"perToken"`
	Tool     string         `json:"tool"`
	Args     map[string]any `json:"args"`
}

// loadCall is one call's outcome: its tenant's index, the final answer's ok and kind, the
// refusals before it, and the milliseconds from its first attempt to that answer.
type loadCall struct {
	Tenant   int    `json:"tenant"`
	OK       bool   `json:"ok"`
	Kind     string `json:"kind,omitempty"`
	Refusals int    `json:"refusals"`
	MS       int64  `json:"ms"`
	Error    string `json:"error,omitempty"`
}

func load(ctx context.Context, url, specJSON string) (any, error) {
	var spec loadSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil || len(spec.Tokens) == 0 || spec.PerToken < 1 {
		return nil, fmt.Errorf("load spec: %v", err)
	}
	var wg sync.WaitGroup
	calls := make([]loadCall, len(spec.Tokens)*spec.PerToken)
	start := time.Now()
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			calls[i] = oneLoadCall(ctx, url, spec, i/spec.PerToken)
		}()
	}
	wg.Wait()
	return map[string]any{"calls": calls, "wallMs": time.Since(start).Milliseconds()}, nil
}

func oneLoadCall(ctx context.Context, url string, spec loadSpec, tenant int) (out loadCall) {
	out.Tenant = tenant
	start := time.Now()
	defer func() { out.MS = time.Since(start).Milliseconds() }()
	c, err := connect(ctx, url, spec.Tokens[tenant])
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer c.Close()
	for {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: spec.Tool, Arguments: spec.Args}})
		if err != nil {
			out.Error = err.Error()
			return out
		}
		var sc struct {
			OK         bool   `json:"ok"`
			Kind       string `json:"kind"`
			RetryAfter int    `json:"retryAfterSeconds"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &sc)
		if sc.Kind != "rate_limited" {
			out.OK, out.Kind = sc.OK, sc.Kind
			return out
		}
		out.Refusals++
		select {
		case <-time.After(time.Duration(max(1, sc.RetryAfter)) * time.Second):
		case <-ctx.Done():
			out.Error = ctx.Err().Error()
			return out
		}
	}
}
