package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

func main() {
	if isShell(os.Args[0]) { // /bin/bash and /bin/sh of the fake image (shell.go)
		os.Exit(shellMain(os.Args))
	}
	os.Exit(run(os.Args[1:]))
}

// directiveRe finds the per-call scenario directive `fake:<name>[?k=v&k2=v2]` in the prompt.
var directiveRe = regexp.MustCompile(`fake:([a-z0-9_]+)(\?[^\s]*)?`)

// selectScenario returns the scenario and parameters for this call: the first directive in the
// prompt, else $FAKE_CLINE_SCENARIO (same syntax without "fake:"), else "pong".
func selectScenario(prompt string) (string, url.Values) {
	spec := ""
	if m := directiveRe.FindStringSubmatch(prompt); m != nil {
		spec = m[1] + m[2]
	} else if env := os.Getenv("FAKE_CLINE_SCENARIO"); env != "" {
		spec = strings.TrimPrefix(env, "fake:")
	} else {
		spec = "pong"
	}
	name, query, _ := strings.Cut(spec, "?")
	params, _ := url.ParseQuery(query)
	return name, params
}

func ansiError(w *stream, msg string) {
	w.text("\x1b[31merror:\x1b[0m " + msg + "\n")
}

// run is the whole CLI; it returns the exit code.
func run(args []string) int {
	if code, ok := helperMain(args); ok {
		return code
	}
	started := time.Now()
	out := &stream{w: os.Stdout}
	errOut := &stream{w: os.Stderr}
	sig := startSignals(out, errOut)
	rec := recordInfo{args: args, stdin: stdinKind(), started: started}

	cfg, err := parseArgs(args)
	if err == nil {
		err = cfg.validate()
	}
	if err != nil {
		rec.scenario, rec.params = selectScenario(strings.Join(args, " "))
		rec.usageError = err.Error()
		writeRecord(rec)
		var ue *usageError
		if errors.As(err, &ue) {
			ansiError(errOut, ue.msg)
		}
		return 1
	}
	if cfg.showVersion || cfg.subcommandWord == "version" {
		out.text(version + "\n")
		return 0
	}
	if cfg.help {
		out.text("Usage: cline [options] [command] [prompt]\n\nfake-cline: a scenario-driven stand-in for Cline CLI " + version + " (see --list-scenarios)\n")
		return 0
	}
	if cfg.acp && cfg.subcommandWord == "" && len(cfg.positionals) == 0 {
		return acpMain(cfg, out, errOut) // acp.go
	}
	if cfg.subcommandWord != "" {
		ansiError(errOut, fmt.Sprintf("fake-cline: command %q is not implemented", cfg.subcommandWord))
		return 1
	}

	prompt := readPrompt(cfg, rec.stdin)
	procCwd, _ := os.Getwd()
	p := resolvePaths(cfg, os.Getenv, procCwd)
	rec.paths = &p
	rec.scenario, rec.params = selectScenario(prompt)
	if prompt == "" || cfg.sessionID != "" { // --id means the TUI: unsupported headless (u_session_id_*)
		rec.usageError = "no prompt"
		writeRecord(rec)
		if cfg.json {
			errOut.jsonLine(obj{{"type", "error"}, {"message", "JSON output mode requires a prompt argument or piped stdin (interactive mode is unsupported)"}})
		} else {
			ansiError(errOut, "interactive mode requires a TTY (stdin/stdout must both be terminals)")
		}
		return 1
	}
	sc, ok := scenarios[rec.scenario]
	if !ok {
		rec.usageError = "unknown scenario"
		writeRecord(rec)
		ansiError(errOut, fmt.Sprintf("fake-cline: unknown scenario %q (see fake-cline --list-scenarios)", rec.scenario))
		return 2
	}
	if sc.preSettings != nil { // failures that happen before the CLI touches any state
		writeRecord(rec)
		return sc.preSettings(out, errOut)
	}
	s := newSession()
	s.cfg, s.paths, s.out, s.errOut, s.sig = cfg, p, out, errOut, sig
	s.params, s.scenario, s.prompt = rec.params, rec.scenario, taskOf(prompt)
	return runScenario(sc, s, rec)
}

// helperMain runs the helper modes and --list-scenarios (ok true), else reports ok false.
func helperMain(args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case helperGrandchild:
		return grandchildMain(args[1:]), true
	case helperSleep:
		return sleepMain(args[1:]), true
	case helperServe:
		return serveMain(args[1:]), true
	case helperNetAttack:
		return netAttackMain(args[1:]), true
	case "--list-scenarios":
		listScenarios(os.Stdout)
		return 0, true
	}
	return 0, false
}

// readPrompt is the prompt argument with piped stdin appended, as the CLI takes them.
func readPrompt(cfg *config, stdin string) string {
	prompt := cfg.prompt()
	if stdin == "pipe" || stdin == "file" {
		data, _ := io.ReadAll(os.Stdin)
		if extra := strings.TrimSpace(string(data)); extra != "" {
			if prompt == "" {
				prompt = extra
			} else {
				prompt += "\n\n" + extra
			}
		}
	}
	return prompt
}

// runScenario prepares the session's state as the CLI does (attempt counter, providers.json,
// global settings, auto-approve) and runs the scenario.
func runScenario(sc scenarioDef, s *session, rec recordInfo) int {
	cfg, p, errOut := s.cfg, s.paths, s.errOut
	if sc.usesState {
		key := s.param("key", rec.scenario)
		n, err := nextAttempt(stateDir(p.dataDir), key)
		if err != nil {
			errOut.jsonLine(obj{{"type", "error"}, {"message", "fake-cline: " + err.Error()}})
			return 2
		}
		s.attempt, rec.attempt = n, n
	}

	pf := readProviders(p.providers)
	s.provider, s.model = pf.resolveRun(cfg, time.Now())
	rec.provider, rec.model = s.provider, s.model
	if rec.scenario == "token_refresh" {
		rec.token = s.param("token", "fake-access-"+randBase36(24))
		pf.setAccessToken(s.param("id", s.provider), rec.token)
	}
	if err := writeAtomic(p.providers, pf.marshal()); err != nil {
		writeRecord(rec)
		errOut.jsonLine(obj{{"type", "error"}, {"message", err.Error()}})
		return 1
	}
	g := readGlobal(p.global)
	s.disabled = map[string]bool{}
	for _, t := range g.DisabledTools {
		s.disabled[t] = true
	}
	s.autoApprove = true
	switch {
	case cfg.autoApprove != nil:
		s.autoApprove = *cfg.autoApprove
	case cfg.yolo:
	case g.ToolAutoApprove != nil:
		s.autoApprove = *g.ToolAutoApprove
	}
	if dir := s.param("count_dir", ""); dir != "" {
		n, leave := enterCountDir(dir)
		defer leave()
		rec.concurrent = n
	}
	writeRecord(rec)
	probeMachineID()
	return sc.run(s)
}
