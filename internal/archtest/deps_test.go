// Package archtest keeps the import arrows of ARCHITECTURE.md true: cmd → bridge/* → sandbox/*,
// bridge/cline and bridge/redact import nothing of ours, bridge/run/engine never bridge/run, bridge/acp only bridge/cline (and is
// the only importer of the ACP SDK), sandbox imports only the standard library (and so does
// sandbox/archive, the parser of what a container sends back, and bridge/store, the records on
// disk that bridge/jobs and bridge/sessions use), each external system has one
// adapter package (Docker two: sandbox/engine finds and connects to the engine, sandbox/docker
// runs containers on it), clientconfig (setup's editing of MCP clients' files) knows no flag of
// ours, and nothing imports cmd.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/cline-mcp/cline-mcp/"

func TestImportArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[strings.TrimPrefix(f[0], mod)] = f[1:]
	}
	if len(imports) < 10 {
		t.Fatalf("go list found only %d packages; the test would prove nothing", len(imports))
	}
	ours := func(imp string) (string, bool) { return strings.TrimPrefix(imp, mod), strings.HasPrefix(imp, mod) }
	stdlib := func(imp string) bool { return !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") }
	for pkg, imps := range imports {
		for _, imp := range imps {
			o, isOurs := ours(imp)
			switch {
			case isOurs && strings.HasPrefix(o, "cmd/"):
				t.Errorf("%s imports %s: nothing may import cmd", pkg, o)
			case pkg == "config" && (isOurs || !stdlib(imp) && imp != "github.com/pelletier/go-toml/v2"):
				t.Errorf("config imports %s: the configuration file's keys and reading use only the standard library and the TOML parser", imp)
			case pkg == "clientconfig" && (isOurs && o != "sandbox/git" || !isOurs && !stdlib(imp) && imp != "github.com/pelletier/go-toml/v2" && imp != "github.com/tailscale/hujson"):
				t.Errorf("clientconfig imports %s: an MCP client's file is edited with the standard library, the JSON and TOML parsers and sandbox/git's non-blocking open", imp)
			case pkg == "sandbox" && !stdlib(imp):
				t.Errorf("sandbox imports %s: it may use only the standard library", imp)
			case pkg == "internal/filetree" && !stdlib(imp):
				t.Errorf("internal/filetree imports %s: a test helper of sandbox/* uses only the standard library", imp)
			case pkg == "internal/testengine" && isOurs:
				t.Errorf("internal/testengine imports %s: it must import nothing of ours", o)
			case pkg == "sandbox/proc" && isOurs:
				t.Errorf("sandbox/proc imports %s: it must import nothing of ours", o)
			case pkg == "sandbox/egress" && !stdlib(imp):
				t.Errorf("sandbox/egress imports %s: the proxy uses only the standard library", imp)
			case pkg == "sandbox/archive" && !stdlib(imp):
				t.Errorf("sandbox/archive imports %s: the parser a hostile container talks to uses only the standard library", imp)
			case pkg == "sandbox/docker" && o == "sandbox/archive":
				// copy mode's archives are read and written by sandbox/archive
			case pkg == "sandbox/docker" && o == "sandbox/egress":
				// the executor speaks the egress proxy's control protocol
			case pkg == "sandbox/docker" && o == "sandbox/engine":
				// the executor runs on the engine that sandbox/engine found and connected to
			case pkg == "cmd/cline-mcp-k8s-helper" && !stdlib(imp):
				t.Errorf("cmd/cline-mcp-k8s-helper imports %s: the in-pod helper is static and small, the standard library only", imp)
			case pkg == "sandbox/kubernetes" && o == "sandbox/archive":
				// copy in and out of pods goes through the same archive checks as Docker's copy mode
			case pkg == "sandbox/kubernetes" && o == "sandbox/egress":
				// the executor hands a run's credential to its pod's egress sidecar in the proxy's words
			case strings.HasPrefix(imp, "k8s.io/") && pkg != "sandbox/kubernetes" && pkg != "internal/testcluster":
				t.Errorf("%s imports %s: Kubernetes is used only in sandbox/kubernetes (and the test cluster)", pkg, imp)
			case pkg == "sandbox/worktree" && o == "sandbox/git":
				// the manager, pool and sweeper run git through the trust boundary's git side
			case pkg == "sandbox/git" && isOurs && o != "sandbox":
				t.Errorf("sandbox/git imports %s: the trust boundary's git side may use only sandbox of ours", o)
			case pkg == "bridge/store" && !stdlib(imp):
				t.Errorf("bridge/store imports %s: the record store uses only the standard library", imp)
			case (pkg == "bridge/jobs" || pkg == "bridge/sessions") && isOurs && o != "bridge/store":
				t.Errorf("%s imports %s: it may use only bridge/store of ours", pkg, o)
			case pkg == "bridge/service" && (isOurs && o != "bridge/run" && o != "sandbox" && o != "sandbox/git" || !isOurs && !stdlib(imp)):
				t.Errorf("bridge/service imports %s: tenants, admission and remote repositories know only bridge/run's call and result, sandbox/git (every git command goes through it) and the standard library (no MCP)", imp)
			case pkg == "bridge/review" && isOurs:
				t.Errorf("%s imports %s: it must import nothing of ours", pkg, o)
			case pkg == "sandbox/engine" && isOurs && o != "sandbox":
				t.Errorf("sandbox/engine imports %s: engine discovery may use only sandbox of ours", o)
			case pkg == "sandbox/engine" && !stdlib(imp) && !isOurs && !strings.HasPrefix(imp, "github.com/moby/moby/"):
				t.Errorf("sandbox/engine imports %s: only the standard library and the moby client", imp)
			case strings.HasPrefix(pkg, "sandbox/") && isOurs && o != "sandbox" && o != "sandbox/proc":
				t.Errorf("%s imports %s: sandbox/* may import only sandbox and sandbox/proc of ours", pkg, o)
			case pkg == "bridge/acp" && isOurs && o != "bridge/cline":
				t.Errorf("bridge/acp imports %s: the ACP engine may use only bridge/cline's vocabulary", o)
			case pkg == "bridge/acp" && !stdlib(imp) && !isOurs && imp != "github.com/coder/acp-go-sdk" && !strings.HasPrefix(imp, "mvdan.cc/sh/v3/"):
				t.Errorf("bridge/acp imports %s: only the ACP SDK and the shell parser", imp)
			case strings.HasPrefix(imp, "github.com/coder/acp-go-sdk") && pkg != "bridge/acp":
				t.Errorf("%s imports the ACP SDK: only bridge/acp speaks ACP", pkg)
			case (pkg == "bridge/cline" || pkg == "bridge/redact" || pkg == "bridge/settings") && isOurs:
				t.Errorf("%s imports %s: it must import nothing of ours", pkg, o)
			case pkg == "bridge/run" && isOurs && (o == "bridge/mcpserver" || strings.HasPrefix(o, "internal/")):
				t.Errorf("bridge/run imports %s: arrows point from mcpserver to run", o)
			case pkg == "bridge/run/engine" && isOurs && o != "bridge/cline" && o != "bridge/acp" && o != "bridge/redact" && o != "sandbox":
				t.Errorf("bridge/run/engine imports %s: an engine gets a Turn and returns Facts; of ours it speaks only to the CLI (bridge/cline, bridge/acp), the redactor's tails and the executor (sandbox), never to the call or the runner", o)
			case strings.HasPrefix(imp, "github.com/moby/") && pkg != "sandbox/docker" && pkg != "sandbox/engine":
				t.Errorf("%s imports %s: Docker is used only in sandbox/docker and sandbox/engine", pkg, imp)
			case imp == "github.com/mark3labs/mcp-go/server" && pkg != "bridge/mcpserver" && pkg != "contract/mcpwriter":
				t.Errorf("%s imports mcp-go's server: only bridge/mcpserver (and the contract suite's MCP server stand-in) may", pkg)
			case strings.HasPrefix(pkg, "bridge/") && isOurs && strings.HasPrefix(o, "internal/"):
				t.Errorf("%s imports %s: test helpers are not for library code", pkg, o)
			}
		}
	}
}

// TestOneExecOfCline: only sandbox/host starts Cline on the host; git runs only in
// sandbox/worktree and sandbox/git. Other packages may not import os/exec (cmd and test helpers aside).
func TestOsExecOnlyInAdapters(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"bridge/...", mod+"sandbox/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// sandbox/lifeline starts one process: the server's own binary as its watchdog, never Cline;
	// sandbox/engine starts ssh for an ssh:// engine (docker system dial-stdio).
	allowed := map[string]bool{"sandbox/host": true, "sandbox/worktree": true, "sandbox/git": true, "sandbox/engine": true, "bridge/run": true, "sandbox/lifeline": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		for _, imp := range f[1:] {
			if imp == "os/exec" && !allowed[pkg] {
				t.Errorf("%s imports os/exec; processes are started only by the sandbox adapters", pkg)
			}
		}
	}
}
