package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// acpScenarios are the per-prompt behaviours of ACP mode, selected like --json scenarios (a
// `fake:<name>?k=v` directive in the prompt, else $FAKE_CLINE_SCENARIO, else pong). Common
// params: delay_ms= (model latency), wait_file=, max_iterations=, ignore_cancel=true (the prompt
// ignores session/cancel: a stuck agent). The process-wide FAKE_CLINE_ACP_IGNORE_EOF=1 keeps the
// process alive after stdin ends (an agent only a kill stops).
var acpScenarios = map[string]func(*acpRun) []turn{
	"pong":    func(r *acpRun) []turn { return []turn{textTurn(r.param("text", "PONG"))} },
	"echo":    func(r *acpRun) []turn { return []turn{textTurn(r.prompt)} },
	"history": acpHistory,
	"thinking": func(*acpRun) []turn {
		return []turn{{reasoning: []string{"Let me think", " about PONG."}, text: []string{"PONG"}}}
	},
	"read": func(r *acpRun) []turn {
		return []turn{{calls: []call{{tool: "read_files", files: []string{r.tools.abs(r.param("path", "README.md"))}}}}, textTurn("Read it.")}
	},
	"tool_loop": func(r *acpRun) []turn { // the last turn repeats up to max_iterations=
		return []turn{{calls: []call{{tool: "read_files", files: []string{r.tools.abs(r.param("path", "README.md"))}}}}}
	},
	"edit": func(r *acpRun) []turn {
		p := r.param("path", "hello.txt")
		c := call{tool: "editor", path: r.tools.abs(p), newText: r.param("content", "Hello from the fake model\n")}
		return []turn{{text: []string{"I will create " + p + "."}, calls: []call{c}}, textTurn("Done with " + p + ".")}
	},
	"apply_patch": func(r *acpRun) []turn {
		patch := "*** Begin Patch\n*** Add File: " + r.tools.abs(r.param("path", "patched.txt")) + "\n+patched\n*** End Patch\n"
		return []turn{{calls: []call{{tool: "apply_patch", newText: patch}}}, textTurn("Patched.")}
	},
	"call_provider": acpCallProvider,
	"run_commands": func(r *acpRun) []turn {
		cmds := r.params["cmd"]
		if len(cmds) == 0 {
			cmds = []string{"echo hi-from-tool"}
		}
		return []turn{{calls: []call{{tool: "run_commands", commands: cmds}}}, textTurn("Ran the commands.")}
	},
	"commit": func(r *acpRun) []turn {
		p := r.param("path", "committed.txt")
		commit := `git add -A && git -c user.name=fake-cline -c user.email=fake-cline@example.invalid -c commit.gpgsign=false commit -qm "` + r.param("message", "fake-cline commit") + `"`
		return []turn{
			{calls: []call{{tool: "editor", path: r.tools.abs(p), newText: "committed by fake-cline\n"}}},
			{calls: []call{{tool: "run_commands", commands: []string{commit}}}},
			textTurn("Committed " + p + "."),
		}
	},
	"read_then_edit": func(r *acpRun) []turn {
		return []turn{{calls: []call{
			{tool: "read_files", files: []string{r.tools.abs(r.param("read", "README.md"))}},
			{tool: "editor", path: r.tools.abs(r.param("path", "hello.txt")), newText: "Hello from the fake model\n"},
		}}, textTurn("Read and edited.")}
	},
	"tool_denied_abort": func(r *acpRun) []turn {
		return []turn{{calls: []call{{tool: "editor", path: r.tools.abs("x.txt"), newText: "x\n"}}}}
	},
	"hang": func(r *acpRun) []turn {
		if r.param("after_events", "false") == "true" {
			return []turn{{text: []string{"Working on it"}, hang: true}}
		}
		return []turn{{hang: true}}
	},
	"slow": func(r *acpRun) []turn {
		n := r.tools.intParam("seconds", 5) * 1000 / max(r.tools.intParam("interval_ms", 1000), 1)
		gap := time.Duration(r.tools.intParam("interval_ms", 1000)) * time.Millisecond
		var text []string
		for i := range n {
			text = append(text, "tick "+strconv.Itoa(i+1)+" ")
		}
		return []turn{{text: text, gap: gap}}
	},
	"http_429":   acpFail(err429),
	"http_500":   acpFail(err500),
	"http_503":   acpFail(err503),
	"http_401":   acpFail(err401),
	"auth_error": acpFail(providerError{"Incorrect API key provided: sk-test-***123.", "acp_auth"}),
}

func acpFail(pe providerError) func(*acpRun) []turn {
	return func(*acpRun) []turn { return []turn{{err: &pe}} }
}

// acpHistory answers with what the session remembers: the number of earlier user messages and
// the first one, so a test can see that a later turn (or a loaded session) has the history.
func acpHistory(r *acpRun) []turn {
	r.s.mu.Lock()
	var users []string
	for _, m := range r.s.messages[:max(len(r.s.messages)-1, 0)] {
		if m.Role == "user" {
			users = append(users, unwrapUserInput(m.text()))
		}
	}
	r.s.mu.Unlock()
	first := ""
	if len(users) > 0 {
		first = users[0]
	}
	return []turn{textTurn("earlier=" + strconv.Itoa(len(users)) + " first=" + strings.TrimSpace(first))}
}

// acpCallProvider is call_provider in ACP mode: the provider of CLINE_PROVIDER with the baseUrl and
// apiKey of the data dir's providers.json (CLINE_API_KEY when it has none, as the real CLI sends),
// the report (and the container's host name) as the turn's text; later=<ms> makes the request
// again that long after the turn, from the same process, into late.json of the data dir.
func acpCallProvider(r *acpRun) []turn {
	t := r.tools
	t.paths.dataDir = os.Getenv("CLINE_DATA_DIR")
	t.paths.providers = filepath.Join(t.paths.dataDir, "settings", "providers.json")
	t.provider = os.Getenv("CLINE_PROVIDER")
	if r.params.Get("key") == "" {
		r.params.Set("key", "CLINE_API_KEY")
	}
	if ms, err := strconv.Atoi(r.params.Get("later")); err == nil {
		// The same request once more, from this process after the turn ended: its report goes
		// to late.json in the data dir.
		go func() {
			time.Sleep(time.Duration(ms) * time.Millisecond)
			_ = os.WriteFile(filepath.Join(t.paths.dataDir, "late.json"), appendJSON(nil, callProvider(t)), 0o644)
		}()
	}
	host, _ := os.Hostname()
	return []turn{textTurn(string(appendJSON(nil, append(callProvider(t), kv{"host", host}))))}
}
