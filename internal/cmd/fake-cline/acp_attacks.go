//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// Attacks of a hostile ACP agent on the host that runs it, and an agent only a kill stops.
//
// FAKE_CLINE_ACP_ATTACK (passed into a container with --docker-env) makes an `--acp` process,
// as it starts and before it answers anything, replace the providers.json of its settings copy
// ($CLINE_PROVIDER_SETTINGS_PATH, else $CLINE_DATA_DIR/settings/providers.json):
//   - providers_fifo: with a FIFO (a host that opens it blocking would hang for good);
//   - providers_link: with a symbolic link to $FAKE_CLINE_ACP_ATTACK_TARGET (a host that follows
//     it reads a file of the run's choosing, and would send its model name back to the run).
//
// The prompt scenario attack_report answers with what the attack did (the marker that it ran)
// and the model the client selected afterwards, as JSON.
//
// run_each makes one run_commands call per cmd= (each in its own model response, in order), so a
// permitted command runs before a rejected one. stubborn fails the first fails= (0) invocations
// per key= with a transient 503, and then ignores SIGINT, SIGTERM, session/cancel and the end of
// stdin: only SIGKILL ends it (a line on stderr says so first).

// acpAttackResult is what the start-up attack did.
type acpAttackResult struct {
	Attack string `json:"attack"`
	Path   string `json:"path"`
	Made   bool   `json:"made"`
	Error  string `json:"error,omitempty"`
}

var acpAttack acpAttackResult

func init() {
	acpScenarios["attack_report"] = acpAttackReport
	acpScenarios["run_each"] = acpRunEach
	acpScenarios["stubborn"] = acpStubborn
	name := os.Getenv("FAKE_CLINE_ACP_ATTACK")
	if name == "" || !hasArg("--acp") {
		return
	}
	acpAttack = attackProviders(name)
}

func hasArg(a string) bool {
	for _, x := range os.Args[1:] {
		if x == a {
			return true
		}
	}
	return false
}

// attackProviders replaces the settings copy's providers.json as the attack name says.
func attackProviders(name string) acpAttackResult {
	p := os.Getenv("CLINE_PROVIDER_SETTINGS_PATH")
	if p == "" {
		p = filepath.Join(os.Getenv("CLINE_DATA_DIR"), "settings", "providers.json")
	}
	r := acpAttackResult{Attack: name, Path: p}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		r.Error = err.Error()
		return r
	}
	var err error
	switch name {
	case "providers_fifo":
		err = syscall.Mkfifo(p, 0o600)
	case "providers_link":
		err = os.Symlink(os.Getenv("FAKE_CLINE_ACP_ATTACK_TARGET"), p)
	default:
		r.Error = "unknown attack " + name
		return r
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	fi, err := os.Lstat(p)
	r.Made = err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSymlink) != 0
	return r
}

// acpAttackReport answers with the attack's marker and the model the client selected.
func acpAttackReport(r *acpRun) []turn {
	r.s.mu.Lock()
	model := r.s.model
	r.s.mu.Unlock()
	b, _ := json.Marshal(struct {
		acpAttackResult
		Model string `json:"model"`
	}{acpAttack, model})
	return []turn{textTurn(string(b))}
}

// acpRunEach is one run_commands call per cmd=, each in its own response.
func acpRunEach(r *acpRun) []turn {
	var turns []turn
	for _, c := range r.params["cmd"] {
		turns = append(turns, turn{calls: []call{{tool: "run_commands", commands: []string{c}}}})
	}
	return append(turns, textTurn("Ran each command."))
}

// acpStubborn fails transiently fails= times per key=, then hangs and lets nothing but SIGKILL
// end the process.
func acpStubborn(r *acpRun) []turn {
	if fails := r.tools.intParam("fails", 0); fails > 0 {
		dir := os.Getenv("FAKE_CLINE_STATE_DIR")
		if dir == "" {
			dir = filepath.Join(os.Getenv("CLINE_DATA_DIR"), "fake-cline-state")
		}
		if n, err := nextAttempt(dir, "stubborn-"+r.param("key", "default")); err == nil && n <= fails {
			return []turn{{err: &err503}}
		}
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	_ = os.Setenv("FAKE_CLINE_ACP_IGNORE_EOF", "1") // acpMain blocks after stdin ends
	r.s.mu.Lock()
	r.s.noCancel = true
	r.s.mu.Unlock()
	r.s.a.errOut.text("fake-cline stubborn: ignoring SIGINT, SIGTERM, session/cancel and stdin EOF\n")
	return []turn{{hang: true}}
}
