//go:build contract && linux

package contract

import (
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
)

// TestProvidersHonourBaseURL: for every provider whose key the egress proxy holds for a container
// (cline.KeyAuthOf), the real CLI sends its model request to <baseUrl>/<its API path> — the
// baseUrl's own path kept — with the saved key in the header KeyAuth names. This is what lets
// a key-less container point the provider at the forwarder on its loopback, and it sends nothing
// else there: every request is one the egress proxy lends the key to. (The fake provider
// speaks only chat completions: the other providers' calls fail after the request is recorded.)
func TestProvidersHonourBaseURL(t *testing.T) {
	paths := map[string]string{"anthropic": "/v1/messages", "openai-native": "/v1/responses",
		"openai-compatible": "/v1/chat/completions", "openrouter": "/v1/chat/completions"}
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), withProviders(func(base string) map[string]any {
		ps := map[string]any{}
		for id := range paths {
			ps[id] = map[string]any{"settings": map[string]any{"provider": id, "apiKey": "sk-contract-" + id, "model": "fake-model", "baseUrl": base},
				"updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}
		}
		return map[string]any{"version": 1, "lastUsedProvider": "openai-compatible", "modes": map[string]any{}, "providers": ps}
	}))
	for id, path := range paths {
		auth, ok := cline.KeyAuthOf(id)
		if !ok {
			t.Fatalf("%s: no KeyAuth", id)
		}
		before := len(w.prov.Requests())
		w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "provider": id, "model": "fake-model"})
		var seen []string
		found := false
		for _, r := range w.prov.Requests()[before:] {
			seen = append(seen, r.Method+" "+r.Path)
			if r.Path == path && r.Header.Get(auth.Header) == auth.HeaderValue("sk-contract-"+id) {
				found = true
			}
			// The egress proxy lends the key to these requests only (cline.APIEndpoints).
			if !slices.Contains(cline.APIEndpoints(id), r.Method+" "+strings.TrimPrefix(r.Path, "/v1")) {
				t.Errorf("%s: the CLI sent %s %s, which the egress proxy would refuse a key-less run", id, r.Method, r.Path)
			}
		}
		if !found {
			t.Errorf("%s: want a request to %s with %s carrying its key; the provider saw %v", id, path, auth.Header, seen)
		}
		if !strings.HasPrefix(auth.DefaultBase, "https://") {
			t.Errorf("%s: default base %q is not https", id, auth.DefaultBase)
		}
	}
}
