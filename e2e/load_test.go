//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestLoadMixed50 sends 50 concurrent calls over ONE session (--max-concurrent 50): host and
// Docker, with and without overrides. Every override run — on the host or in a container — works on
// a private copy, refreshes the token of its own provider block and merges it back: every one of
// those must survive (no lost update, no stale copy written over a newer file), and no override
// may reach the user's file.
func TestLoadMixed50(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: the mixed load needs Docker: %v", dockerErr)
	}
	w := newWorld(t, host, worldOpts{args: []string{"--max-concurrent", "50"}})
	const n = 50
	var overrideProviders []string
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			overrideProviders = append(overrideProviders, fmt.Sprintf("host-%02d", i))
		case 1:
			overrideProviders = append(overrideProviders, fmt.Sprintf("dock-%02d", i))
		}
	}
	w.writeProviders(withProviders(mcpsession.ProvidersTwo, overrideProviders))

	type outcome struct {
		i    int
		sc   map[string]any
		err  error
		want string
	}
	results := make(chan outcome, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			reply := fmt.Sprintf("R-%02d", i)
			args := map[string]any{"prompt": "go fake:pong?text=" + reply}
			switch i % 4 {
			case 0: // host override on its own provider
				args = map[string]any{"prompt": fmt.Sprintf("go fake:token_refresh?token=tok-host-%02d&text=%s", i, reply), "provider": fmt.Sprintf("host-%02d", i), "model": "m-override"}
			case 1: // Docker override on its own provider
				args = map[string]any{"prompt": fmt.Sprintf("go fake:token_refresh?token=tok-dock-%02d&text=%s", i, reply), "provider": fmt.Sprintf("dock-%02d", i), "model": "m-override", "isolation": "docker"}
			case 3: // Docker default
				args["isolation"] = "docker"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			res, err := w.sess.CallErr(ctx, "ask_cline", w.args(args), fmt.Sprintf("load-%d", i))
			o := outcome{i: i, err: err, want: reply}
			if err == nil {
				o.sc = mcpsession.Structured(t, res)
			}
			results <- o
		}(i)
	}
	wg.Wait()
	close(results)
	t.Logf("50 mixed calls took %v", time.Since(t0).Round(time.Millisecond))
	for o := range results {
		if o.err != nil {
			t.Errorf("call %d: %v", o.i, o.err)
			continue
		}
		if o.sc["ok"] != true {
			t.Errorf("call %d: got %v %v", o.i, o.sc["kind"], o.sc["message"])
			continue
		}
		if got := mcpsession.Str(o.sc, "text"); got != o.want {
			t.Errorf("call %d: got text %q, want %q (answers crossed between calls?)", o.i, got, o.want)
		}
		wantIso := host
		if o.i%4 == 1 || o.i%4 == 3 {
			wantIso = docker
		}
		wantIsolation(t, o.sc, wantIso)
	}

	p := w.readProviders() // fails the test when the file is not valid JSON
	if p["lastUsedProvider"] != "openai-compatible" {
		t.Errorf("lastUsedProvider %v, want openai-compatible restored", p["lastUsedProvider"])
	}
	if got := mcpsession.Dig(p, "providers", "openai-native", "settings", "model"); got != "gpt-saved" {
		t.Errorf("openai-native model %v, want gpt-saved restored", got)
	}
	for _, name := range overrideProviders {
		// A host run's refresh is merged back from its private copy; a container's never is.
		want := "tok-" + name
		if strings.HasPrefix(name, "dock-") {
			want = "tok-" + name + "-saved"
		}
		if got := mcpsession.Dig(p, "providers", name, "settings", "auth", "accessToken"); got != want {
			t.Errorf("%s token %v, want %s", name, got, want)
		}
		if got := mcpsession.Dig(p, "providers", name, "settings", "model"); got != "saved-"+name {
			t.Errorf("%s model %v, want saved-%s restored", name, got, name)
		}
	}
	if _, bad := w.sess.Lines(); len(bad) > 0 {
		t.Errorf("%d non-JSON-RPC stdout line(s) under load, first %.200q", len(bad), bad[0])
	}
}

// withProviders adds one configured provider block per name to a providers.json document, each
// signed in with OAuth (a host run may refresh its token; a container's refresh is never kept).
func withProviders(doc string, names []string) string {
	var blocks []string
	for _, n := range names {
		blocks = append(blocks, fmt.Sprintf(`    %q: {"settings": {"provider": %q, "model": "saved-%s", "auth": {"accessToken": "tok-%s-saved", "refreshToken": "rt-%s"}}, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "oauth"}`, n, n, n, n, n))
	}
	const anchor = `    "openai-native": {`
	return strings.Replace(doc, anchor, strings.Join(blocks, ",\n")+",\n"+anchor, 1)
}
