package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strings"
)

// scenarioDef is one selectable behaviour.
type scenarioDef struct {
	doc       string
	run       func(*session) int
	usesState bool // claims an invocation number (FAKE_CLINE_STATE_DIR) before running
	// preSettings, when set, runs instead of everything else right after argument parsing:
	// the failure happens before the CLI reads or writes any state.
	preSettings func(out, errOut *stream) int
}

var scenarios map[string]scenarioDef

func init() {
	scenarios = map[string]scenarioDef{
		"pong":                   {doc: "answer PONG like a_text_pong (param text= for another answer)", run: runPong},
		"echo":                   {doc: "answer with the full prompt as received (stdin appended)", run: func(s *session) int { return s.run(script{turns: []turn{textTurn(chunks(s.prompt, 12)...)}}) }},
		"multiturn":              {doc: "markdown answer in three chunks like a_multiturn_text", run: runMultiturn},
		"thinking":               {doc: "reasoning deltas then PONG like g_thinking_high", run: runThinking},
		"read":                   {doc: "read_files path= (default README.md), then answer", run: runRead},
		"edit":                   {doc: "editor creates path= (default hello.txt) with content=; optional second call replaces old= by new= in replace_path=", run: runEdit},
		"edit_then_fail":         {doc: "editor creates path= (default hello.txt), then the provider fails with a transient 503 (exit 1)", run: runEditThenFail},
		"edit_many":              {doc: "modify tracked modify= (README.md), create create= (new_file.txt), rm delete= and mv rename=a:b when present", run: runEditMany},
		"edit_binary":            {doc: "editor writes bytes= (64) binary bytes to path= (blob.bin)", run: runEditBinary},
		"run_commands":           {doc: "run_commands cmd=… (repeatable; default echo hi-from-tool + git status --porcelain) like b_run_commands_tool", run: runRunCommands},
		"commit":                 {doc: "editor creates path= (committed.txt), then run_commands git add -A + git commit -m message=", run: runCommit},
		"sneak_ref":              {doc: "edits path= (sneak.txt), then writes a new branch ref .git/refs/heads/name= (cline-sneaky) at HEAD with the editor, like an agent without git creating a branch", run: runSneakRef},
		"tool_denied_abort":      {doc: "keeps calling editor on x.txt: aborted after 3 denied iterations (auto-approve false or disabledTools) like b_denied_tools_mistake_limit", run: runDeniedAbort},
		"try_mutate":             {doc: "optional read_files read=, then editor creates path= (mutated.txt), run_commands touch touch= (touched.txt), then answers Done.", run: runTryMutate},
		"http_429":               {doc: "provider 429 after the retries: run_result error, exit 1 like c_http_429", run: failWith(err429)},
		"http_500":               {doc: "provider 500: exit 1 like d_http_500", run: failWith(err500)},
		"http_503":               {doc: "provider 503: exit 1 like d_http_503", run: failWith(err503)},
		"http_401":               {doc: "provider 401: errorClass auth, exit 1 like e_http_401", run: failWith(err401)},
		"conn_refused":           {doc: "connection refused: exit 1 like e_connection_refused", run: failWith(errRefused)},
		"http_429_then_ok":       {doc: "first fails= (1) invocations per key= fail like c_http_429, later ones answer PONG", run: runThenOK(err429), usesState: true},
		"transient_once_then_ok": {doc: "first fails= (1) invocations per key= fail with kind= 429|500|503|conn_refused|finish_error (503), then PONG", run: runTransientThenOK, usesState: true},
		"completed_then_exit1":   {doc: "completed run_result, then stderr {type:error,message:\"session not found: <id>\"} and exit 1", run: runCompletedThenExit1},
		"completed_then_sigterm": {doc: "completed run_result, then the process kills itself with SIGTERM", run: runCompletedThenSigterm},
		"finish_error_exit0":     {doc: "run_result finishReason error but exit 0; transient=true (503 text) or false (401 text); message= overrides", run: runFinishErrorExit0},
		"hang":                   {doc: "model call never returns (one SIGTERM ignored, second exits 1, SIGINT exits 0); after_events=true hangs after a text delta", run: runHang},
		"sigterm_then_response":  {doc: "model call returns only after the first SIGTERM (or wait_ms=): completed + run_aborted local_abort like f_sigterm_then_response", run: runSigtermThenResponse},
		"tool_loop":              {doc: "read_files on path= (README.md) in every iteration, up to max_iterations= (10), then gives up with text; with delay_ms= per model call", run: runToolLoop},
		"slow":                   {doc: "one text delta every interval_ms= (1000) for seconds= (5) seconds, then completes", run: runSlow},
		"garbage":                {doc: "non-JSON stdout, exit 0", run: runGarbage},
		"no_result":              {doc: "valid JSON lines but no done/run_result, exit 0", run: runNoResult},
		"module_not_found":       {doc: "Node's Cannot find module / MODULE_NOT_FOUND on stderr, exit 1, nothing written", preSettings: moduleNotFound},
		"grandchild_holds_stdio": {doc: "re-execs a grandchild (same process group) that keeps stdout/stderr open for seconds= (60); stderr line \"grandchild pid N\"; parent completes and exits 0", run: runGrandchild},
		"huge":                   {doc: "bytes= of content_start lines (default 1 MiB) or one line= bytes long, then a completed result", run: runHuge},
		"secrets":                {doc: "prints sk-/nvapi-/Bearer/\"apiKey\"/API_KEY= secrets built from value= on stdout, stderr and in the final text", run: runSecrets},
		"token_refresh":          {doc: "like pong, and sets providers[id].settings.auth.accessToken (id= defaults to the run's provider) to token= (or a random value, see RECORD refreshedToken)", run: runPong},
		"probe_write":            {doc: "tries to write in /, /etc, the parent of -c, $HOME, -c and /tmp (keep=true leaves the files, so a test can look for them on the host); JSON report as final text", run: runProbeWrite},
		"probe_read":             {doc: "tries to read path= (default /etc/shadow); JSON report", run: runProbeRead},
		"probe_caps":             {doc: "tries chown, mknod, setuid(0), a raw socket; JSON report", run: runProbeCaps},
		"call_provider":          {doc: "POST <baseUrl>/<path=echo> of its provider with its settings' apiKey (or env key=) in header=, plus extra_auth= as a second Authorization; reports base_url, api_key, the answer, and with needle= (hex of a key XOR 0xff) where the key is in the container", run: runCallProvider},
		"probe_net":              {doc: "tries TCP to addr= (1.1.1.1:443) and DNS of host= (example.com), and through the environment's proxy get=<url>, connect=<host:port>, and direct=<url> without it; JSON report", run: runProbeNet},
		"probe_git":              {doc: "runs git log, git status and git commit --allow-empty in -c (needs git in the image); JSON report", run: runProbeGit},
		"probe_pids":             {doc: "tries to start n= (50) child processes; JSON report of how many started", run: runProbePids},
	}
	maps.Copy(scenarios, attackScenarios)
	maps.Copy(scenarios, copyAttackScenarios)
	maps.Copy(scenarios, poolAttackScenarios)
	maps.Copy(scenarios, keylessScenarios)
}

func listScenarios(w io.Writer) {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "%-24s %s\n", n, scenarios[n].doc)
	}
}

func runPong(s *session) int {
	return s.run(script{turns: []turn{textTurn(chunks(s.param("text", "PONG"), 12)...)}})
}

func runMultiturn(s *session) int {
	return s.run(script{turns: []turn{textTurn("Line one.\n\nL", "ine two with", " `code`.\n")}})
}

func runThinking(s *session) int {
	return s.run(script{turns: []turn{{reasoning: []string{"Let me think", " about PONG ", "carefully."}, text: []string{"PONG"}}}})
}

func runToolLoop(s *session) int {
	p := s.abs(s.param("path", "README.md"))
	return s.run(script{turns: []turn{{calls: []call{{tool: "read_files", files: []string{p}}}}}})
}

func runRead(s *session) int {
	p := s.abs(s.param("path", "README.md"))
	return s.run(script{turns: []turn{{calls: []call{{tool: "read_files", files: []string{p}}}}, textTurn("Read it.")}})
}

func runEdit(s *session) int {
	path := s.param("path", "hello.txt")
	calls := []call{{tool: "editor", path: s.abs(path), newText: s.param("content", "Hello from the fake model\n")}}
	intro, done := "I will create "+path+".", "Created "+path+"."
	if rp := s.params.Get("replace_path"); rp != "" {
		old := s.param("old", "hello")
		calls = append(calls, call{tool: "editor", path: s.abs(rp), oldText: &old, newText: s.param("new", "hello world")})
		intro, done = "I will create "+path+" and update "+rp+".", "Created "+path+" and updated "+rp+"."
	}
	return s.run(script{turns: []turn{{text: chunks(intro, 12), calls: calls}, textTurn(chunks(done, 12)...)}})
}

func runEditThenFail(s *session) int {
	path := s.param("path", "hello.txt")
	calls := []call{{tool: "editor", path: s.abs(path), newText: s.param("content", "Hello from the fake model\n")}}
	return s.run(script{turns: []turn{{text: chunks("I will create "+path+".", 12), calls: calls}, {err: &err503}}})
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func runEditMany(s *session) int {
	var calls []call
	if m := s.param("modify", "README.md"); m != "" {
		p := s.abs(m)
		old, err := os.ReadFile(p)
		if err == nil && len(old) > 0 {
			o := string(old)
			calls = append(calls, call{tool: "editor", path: p, oldText: &o, newText: o + "edited by fake-cline\n"})
		} else {
			calls = append(calls, call{tool: "editor", path: p, newText: "edited by fake-cline\n"})
		}
	}
	calls = append(calls, call{tool: "editor", path: s.abs(s.param("create", "new_file.txt")), newText: "created by fake-cline\n"})
	var cmds []string
	if d := s.param("delete", "delete_me.txt"); s.params.Has("delete") || exists(s.abs(d)) {
		cmds = append(cmds, "rm "+d)
	}
	if r := s.param("rename", "rename_me.txt:renamed.txt"); s.params.Has("rename") || exists(s.abs(strings.Split(r, ":")[0])) {
		from, to, _ := strings.Cut(r, ":")
		cmds = append(cmds, "mv "+from+" "+to)
	}
	if len(cmds) > 0 {
		calls = append(calls, call{tool: "run_commands", commands: cmds})
	}
	return s.run(script{turns: []turn{{text: []string{"Editing several files."}, calls: calls}, textTurn("Edited the files.")}})
}

func runEditBinary(s *session) int {
	n := s.intParam("bytes", 64)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 37)
	}
	c := call{tool: "editor", path: s.abs(s.param("path", "blob.bin")), newText: string(b), rawBytes: b}
	return s.run(script{turns: []turn{{calls: []call{c}}, textTurn("Wrote a binary file.")}})
}

func runRunCommands(s *session) int {
	cmds := s.params["cmd"]
	if len(cmds) == 0 {
		cmds = []string{"echo hi-from-tool", "git status --porcelain"}
	}
	return s.run(script{turns: []turn{{calls: []call{{tool: "run_commands", commands: cmds}}}, textTurn("Ran the comm", "ands.")}})
}

func runCommit(s *session) int {
	path := s.param("path", "committed.txt")
	msg := s.param("message", "fake-cline commit")
	cmds := []string{"git add -A", `git -c user.name=fake-cline -c user.email=fake-cline@example.invalid -c commit.gpgsign=false commit -m "` + msg + `"`}
	sc := script{turns: []turn{
		{calls: []call{{tool: "editor", path: s.abs(path), newText: "committed by fake-cline\n"}}},
		{calls: []call{{tool: "run_commands", commands: cmds}}},
		textTurn("Committed " + path + "."),
	}}
	return s.run(sc)
}

// runSneakRef creates a branch by writing the ref file directly: no git binary needed, so it
// also runs in the scratch image, where a read-only .git mount must stop it.
func runSneakRef(s *session) int {
	head := ""
	if b, err := os.ReadFile(s.abs(".git/HEAD")); err == nil {
		ref := strings.TrimSpace(strings.TrimPrefix(string(b), "ref: "))
		if id, err := os.ReadFile(s.abs(".git/" + ref)); err == nil {
			head = strings.TrimSpace(string(id))
		} else {
			head = ref
		}
	}
	path := s.param("path", "sneak.txt")
	sc := script{turns: []turn{
		{calls: []call{{tool: "editor", path: s.abs(path), newText: "sneaked in by fake-cline\n"}}},
		{calls: []call{{tool: "editor", path: s.abs(".git/refs/heads/" + s.param("name", "cline-sneaky")), newText: head + "\n"}}},
		textTurn("Edited " + path + " and made a branch."),
	}}
	return s.run(sc)
}

func runDeniedAbort(s *session) int {
	return s.run(script{turns: []turn{{calls: []call{{tool: "editor", path: s.abs("x.txt"), newText: "x\n"}}}}})
}

func runTryMutate(s *session) int {
	var turns []turn
	if r := s.params.Get("read"); r != "" {
		turns = append(turns, turn{calls: []call{{tool: "read_files", files: []string{s.abs(r)}}}})
	}
	touch := s.abs(s.param("touch", "touched.txt"))
	turns = append(turns,
		turn{calls: []call{{tool: "editor", path: s.abs(s.param("path", "mutated.txt")), newText: s.param("content", "mutated by fake-cline\n")}}},
		turn{calls: []call{{tool: "run_commands", commands: []string{"touch " + touch}}}},
		textTurn("Done."),
	)
	return s.run(script{turns: turns})
}

func failWith(pe providerError) func(*session) int {
	return func(s *session) int {
		return s.run(script{turns: []turn{{err: &pe}}})
	}
}

func runThenOK(pe providerError) func(*session) int {
	return func(s *session) int {
		if s.attempt <= s.intParam("fails", 1) {
			return failWith(pe)(s)
		}
		return runPong(s)
	}
}

func runTransientThenOK(s *session) int {
	if s.attempt > s.intParam("fails", 1) {
		return runPong(s)
	}
	switch s.param("kind", "503") {
	case "429":
		return failWith(err429)(s)
	case "500":
		return failWith(err500)(s)
	case "conn_refused":
		return failWith(errRefused)(s)
	case "finish_error":
		s.params.Set("transient", "true")
		return runFinishErrorExit0(s)
	}
	return failWith(err503)(s)
}

func runCompletedThenExit1(s *session) int {
	if code := runPong(s); code != 0 {
		return code
	}
	id := fmt.Sprintf("%d_%s", s.start.UnixMilli(), randBase36(5))
	s.jsonError("session not found: " + id)
	return 1
}

func runCompletedThenSigterm(s *session) int {
	if code := runPong(s); code != 0 {
		return code
	}
	selfTerminate()
	return 143
}

func runFinishErrorExit0(s *session) int {
	pe := err401
	if s.param("transient", "true") == "true" {
		pe = err503
	}
	if m := s.params.Get("message"); m != "" {
		pe.message = m
	}
	s.begin()
	s.iterationStart()
	s.modelWait(turn{})
	return s.failRun(pe, 0)
}

func runHang(s *session) int {
	if s.param("after_events", "false") != "true" {
		return s.run(script{turns: []turn{{hang: true}}})
	}
	s.begin()
	s.iterationStart()
	s.modelResponded()
	s.event(obj{{"type", "content_start"}, {"contentType", "text"}, {"text", "Working on it"}, {"accumulated", "Working on it"}})
	s.sig.blockForever()
	return 0
}

func runSigtermThenResponse(s *session) int {
	return s.run(script{turns: []turn{{waitTerm: true, text: []string{"PONG"}}}})
}
