// Command fake-cline is a scenario-driven stand-in for the real Cline CLI 3.0.65 (npm `cline`),
// used by the bridge's integration tests on the host and baked into a FROM scratch image. It is
// pure Go, static with CGO_ENABLED=0. Like the real CLI it runs run_commands commands as
// `/bin/bash -c <command>` and its machine id through `/bin/sh`; otherwise it execs only itself
// (the grandchild_holds_stdio and probe_pids helpers). Started as `bash` or `sh` it is a small
// POSIX shell (shell.go): the fake image's /bin/bash and /bin/sh are copies of it.
//
// # What matches the real CLI
//
// Built from recordings of the real CLI (docs/cline-cli.md; the tests compare against copies in
// testdata/recordings): the --json stdout lines byte for byte apart from timestamps, ids and
// durations (ts first, same keys and order, ISO-8601 UTC ms, agent_<ms>_<6>/conv_<ms>_<7> ids);
// the AI-SDK warning blocks on stderr per model call; provider errors (agent_error hook,
// non-recoverable error event, run_result error, JSON stderr line, exit 1); the usage errors
// (ANSI `error:` text, exit 1, nothing written); providers.json path resolution and rewrite
// (lastUsedProvider, model, updatedAt, schema key order, 0600 via <path>.<pid>.tmp + rename,
// new dirs 0700, a schema-invalid entry wipes the file); global-settings.json disabledTools and
// toolAutoApprove; --auto-approve false denying every tool; the consecutive-mistake limit (3,
// --retries N) ending in run_result aborted + run_aborted external_abort with exit 0; stdin read
// to EOF and appended as "<prompt>\n\n<stdin>" when it is a pipe or a regular file; signals of
// the local backend (SIGINT: exit 0 at once without a terminal line; first SIGTERM remembered
// only, a completed run then adds run_aborted local_abort; second SIGTERM: exit 1, nothing).
//
// Choices where the real CLI was not observed: without HOME the data dir is /tmp/.cline/data;
// --yolo/-y is accepted and only means auto-approve (its submit_and_exit flow is not modelled);
// -t is validated (integer >= 1) and ignored, like the local backend; subcommands other than
// `version` fail with "not implemented"; an unparseable providers.json is treated as empty (and
// overwritten), like a schema-invalid one.
//
// # Scenario selection
//
// Per call: the first directive `fake:<scenario>` or `fake:<scenario>?k=v&k2=v2` in the prompt
// (stdin included), e.g. "Reply with PONG fake:huge?bytes=1073741824". Values are URL-query
// encoded (%20 for a space; the directive ends at whitespace). Otherwise the process default
// $FAKE_CLINE_SCENARIO (same syntax without "fake:"), otherwise "pong". An unknown scenario
// exits 2. `fake-cline --list-scenarios` prints them; SCENARIOS.md describes each one.
// Common params: delay_ms= (latency of each model call; default $FAKE_CLINE_DELAY_MS or 0),
// max_iterations= (cap on repeated tool turns, default 10), wait_file= (the first model call waits
// until the path exists), count_dir= (RECORD how many runs marked this dir at the start).
//
// # Cross-process state
//
// Scenarios that fail first and succeed later (http_429_then_ok, transient_once_then_ok) count
// invocations per key= (default: the scenario name) in $FAKE_CLINE_STATE_DIR, or, when unset,
// in <dataDir>/fake-cline-state/ (works in a container whose data-dir copy persists between
// attempts). Each invocation claims the first free file <key>.<n> with O_CREATE|O_EXCL.
//
// # RECORD
//
// With $FAKE_CLINE_RECORD=<file> every invocation appends one JSON line:
//
//	{"pid","pgid","ppid","argv":[...],"cwd","env":{CLINE_* only},"envKeys":[all names, sorted],
//	 "stdin":"devnull"|"pipe"|"file"|"closed"|"tty"|"socket"|"chardev"|"other",
//	 "workDir","dataDir","providersPath","globalSettingsPath"   (absent on usage errors)
//	 "scenario","params":{k:v},"provider"?,"model"?,"concurrent"?,"attempt"?,"refreshedToken"?,
//	 "usageError"?,"startedAt"}
package main
