//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestACPSettingsCopyAttack: a hostile ACP agent in a container replaces the providers.json of
// its settings copy as it starts, before the host selects its model. The host reads nothing of
// that file once the run started (the model was read with the provider's id and key before), so
//   - a FIFO there does not hang the call: it returns (and a later call runs in the same slot);
//   - a symbolic link to a host file of the run's choosing is never followed: the model the run
//     is given is the copy's, and the linked file's content appears nowhere in the result.
//
// The agent's own report (attack_report: the attack ran and made the FIFO or link) is the marker.
func TestACPSettingsCopyAttack(t *testing.T) {
	for _, attack := range []string{"providers_fifo", "providers_link"} {
		t.Run(attack, func(t *testing.T) {
			leaked := "leaked-model-" + randHex(6)
			env := []string{"FAKE_CLINE_ACP_ATTACK=" + attack}
			if attack == "providers_link" {
				target := filepath.Join(suiteRoot, "leak-"+randHex(6)+".json")
				doc := `{"version":1,"lastUsedProvider":"openai-compatible","providers":{"openai-compatible":{"settings":{"provider":"openai-compatible","model":"` + leaked + `"}}}}`
				if err := os.WriteFile(target, []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.Remove(target) })
				env = append(env, "FAKE_CLINE_ACP_ATTACK_TARGET="+target)
			}
			w := newWorld(t, docker, worldOpts{env: env, args: []string{"--cline-protocol", "acp", "--max-concurrent", "1",
				"--sessions-dir", filepath.Join(t.TempDir(), "sessions"),
				"--docker-env", "FAKE_CLINE_ACP_ATTACK", "--docker-env", "FAKE_CLINE_ACP_ATTACK_TARGET"}})
			// A hang guard, not a timing assertion: the old host read of a FIFO never returned.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := w.sess.CallErr(ctx, "ask_cline", w.args(map[string]any{"prompt": "fake:attack_report", "timeoutSeconds": 60}), nil)
			if err != nil {
				t.Fatalf("the call did not return: %v", err)
			}
			sc := mcpsession.Structured(t, res)
			wantOK(t, sc)
			var rep struct {
				Attack, Path, Error, Model string
				Made                       bool
			}
			if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
				t.Fatalf("report %q: %v", sc["text"], err)
			}
			// The attack's name is a --docker-env value, which the result redacts.
			if !rep.Made || rep.Error != "" || !strings.HasSuffix(rep.Path, "/settings/providers.json") {
				t.Fatalf("the attack did not run (the marker): %+v", rep)
			}
			if rep.Model != "fake-model" {
				t.Errorf("the run was given model %q, want the copy's fake-model", rep.Model)
			}
			if all, _ := json.Marshal(sc); strings.Contains(string(all), leaked) {
				t.Errorf("the linked file's content reached the result: %s", all)
			}
			// The slot is free again: the next call runs.
			_, next := w.call("ask_cline", map[string]any{"prompt": "fake:pong", "timeoutSeconds": 60})
			wantOK(t, next)
		})
	}
}
