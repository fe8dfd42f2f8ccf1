//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestDockerTouchedFileNamesRedacted: an ask_cline_workspace run in a container writes a file
// named after the API key in the server's environment: the touched report and the text name it
// redacted, and the key comes back nowhere in the result.
func TestDockerTouchedFileNamesRedacted(t *testing.T) {
	const key = "acme-plain-key-0123456789xyz" // no credential shape: only the literal redacts it
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	e := prepareEnv(t)
	e.startWithEnv([]string{"ACME_API_KEY=" + key}, "--docker-image", mcpsession.FakeImage, "--docker-network", "none")
	gitInit(t, e.work, map[string]string{"README.md": "committed\n"})
	res, sc := e.call("ask_cline_workspace", map[string]any{"isolation": "docker",
		"prompt": "Try fake:try_mutate?" + url.Values{"touch": {"notes-" + key + ".txt"}}.Encode()})
	wantDockerOK(t, sc)
	wt, _ := sc["worktree"].(map[string]any)
	if touched := fmt.Sprint(wt["touched"]); !strings.Contains(touched, "notes-[REDACTED].txt") {
		t.Errorf("touched report %v: want notes-[REDACTED].txt", touched)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), key) {
		t.Errorf("the key leaks from the result:\n%s", b)
	}
}
