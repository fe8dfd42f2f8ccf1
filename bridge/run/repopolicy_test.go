package run

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cline-mcp/cline-mcp/config"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// writeRepoPolicy makes the harness's checkout a repository (a .git entry) with text as its
// .cline-mcp.toml.
func writeRepoPolicy(t *testing.T, h *harness, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(h.cwd, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.cwd, config.RepoFileName), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRepoPolicyTightensTheCall: a repository's file raises a host call into a container, lowers
// its spend limits and narrows --egress-allow for its container runs, each with a warning; the
// run's spec carries only the endpoints the repository kept.
func TestRepoPolicyTightensTheCall(t *testing.T) {
	h := newHarness(t, pong(t))
	h.cfg.DockerEgress = sandbox.EgressProvider
	h.cfg.EgressAllow = []string{"a.example:443", "b.example:443"}
	writeRepoPolicy(t, h, "[isolation]\nfloor = \"docker\"\n[limits]\nmax-iterations = 3\nmax-cost-usd = 0.5\n[egress]\nallow = [\"b.example:443\", \"c.example:443\"]\n")
	c := h.call(AskCline)
	c.MaxIterations = 10
	res := h.do(t.Context(), c)
	wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}})
	wantWarning(t, res, "asks for isolation docker")
	wantWarning(t, res, "lowers maxIterations to 3")
	wantWarning(t, res, "lowers maxCostUsd to 0.5000")
	wantWarning(t, res, "c.example:443")
	spec := h.cli.runs()[0]
	if spec.AllowOnly == nil || !slices.Equal(*spec.AllowOnly, []string{"b.example:443"}) {
		t.Errorf("spec.AllowOnly %v, want only b.example:443", spec.AllowOnly)
	}
	if res.Enforcement != nil && res.Enforcement.Egress == sandbox.EgressProvider && slices.Contains(res.Enforcement.AllowedEndpoints, "a.example:443") {
		t.Errorf("the report allows a.example:443, which the repository took away: %v", res.Enforcement.AllowedEndpoints)
	}
}

// TestRepoPolicyFailsClosed: a policy the server cannot honour for one call, or a file that is
// not a regular file or says what a repository may not, fails the call before anything runs.
func TestRepoPolicyFailsClosed(t *testing.T) {
	for name, tc := range map[string]struct {
		text   string
		egress sandbox.EgressMode
		plant  func(h *harness) error
	}{
		"egress none on a provider server":  {text: "[egress]\nmode = \"none\"\n[isolation]\nfloor = \"docker\"\n", egress: sandbox.EgressProvider},
		"egress provider on an open server": {text: "[egress]\nmode = \"provider\"\n[isolation]\nfloor = \"docker\"\n", egress: sandbox.EgressOpen},
		"a loosening key":                   {text: "[docker]\nimage = \"evil/cline\"\n", egress: sandbox.EgressProvider},
		"a FIFO": {egress: sandbox.EgressProvider, plant: func(h *harness) error {
			os.Remove(filepath.Join(h.cwd, config.RepoFileName))
			return mkfifo(filepath.Join(h.cwd, config.RepoFileName))
		}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, pong(t))
			h.cfg.DockerEgress = tc.egress
			writeRepoPolicy(t, h, tc.text)
			if tc.plant != nil {
				if err := tc.plant(h); err != nil {
					t.Skipf("cannot plant: %v", err)
				}
			}
			res := h.do(t.Context(), h.call(AskCline))
			wantResult(t, res, result{kind: "launch_failed", attempts: 0})
			wantContains(t, "message", res.Message, config.RepoFileName)
			if n := len(h.cli.runs()); n != 0 {
				t.Errorf("%d runs started", n)
			}
		})
	}
	// Outside a repository, and in one without the file, nothing changes.
	h := newHarness(t, pong(t))
	res := h.do(t.Context(), h.call(AskCline))
	wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{sandbox.IsolationHost}})
}
