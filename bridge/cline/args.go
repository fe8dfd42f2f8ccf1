package cline

import (
	"runtime"
	"sort"
	"strings"
)

// Request is what the bridge asks of one Cline run. The caller validates the fields (lengths,
// the provider/model pattern, the thinking level); Args only shapes them into argv.
type Request struct {
	Prompt       string
	SystemPrompt string // empty: Cline's own system prompt
	Cwd          string // empty: no -c (Cline uses its working directory)
	Thinking     string // none|low|medium|high|xhigh; empty means "none", the seed's default
	Provider     string // empty: the provider saved in providers.json
	Model        string // empty: the provider's saved model
	DataDir      string // empty: no --data-dir (host runs); set for Docker runs
	AutoApprove  bool
}

// ThinkingLevels are the values `--thinking` accepts (docs/cline-cli.md "Exit codes", recording u_invalid_thinking).
var ThinkingLevels = []string{"none", "low", "medium", "high", "xhigh"}

// ValidThinking reports whether s is empty or one of ThinkingLevels.
func ValidThinking(s string) bool {
	if s == "" {
		return true
	}
	for _, l := range ThinkingLevels {
		if s == l {
			return true
		}
	}
	return false
}

// Args returns the argv of one headless JSON run, without argv[0]. The prompt is always the last
// element, one argument, shaped by PromptArg.
//
// The thinking level is always passed, "none" included: without the flag the CLI falls back to
// the reasoning effort saved in providers.json (g_thinking_omitted_model_reasons), while
// `--thinking none` sends no reasoning_effort at all (g_thinking_none), which is what a caller
// who asked for "none" means. Deliberately absent: `-t` (not enforced on the local backend; the
// bridge owns the deadline), `--yolo` (loops forever without submit_and_exit), `--id` (always
// interactive) and `-k` (the CLI would save the key to disk).
func Args(r Request) []string {
	thinking := r.Thinking
	if thinking == "" {
		thinking = "none"
	}
	approve := "false"
	if r.AutoApprove {
		approve = "true"
	}
	args := []string{"--json", "--auto-approve", approve, "--thinking", thinking}
	if r.Provider != "" {
		args = append(args, "-P", r.Provider)
	}
	if r.Model != "" {
		args = append(args, "-m", r.Model)
	}
	if r.SystemPrompt != "" {
		// An option value may start with "-": the CLI's parser takes the next argument as the
		// value (verified on 3.0.65 with `-s -sys` and `-m -weird`), unlike a positional prompt.
		args = append(args, "-s", r.SystemPrompt)
	}
	if r.Cwd != "" {
		args = append(args, "-c", r.Cwd)
	}
	if r.DataDir != "" {
		args = append(args, "--data-dir", r.DataDir)
	}
	return append(args, PromptArg(r.Prompt))
}

// PromptArg shapes a prompt so the CLI takes it as the prompt (docs/cline-cli.md "The prompt", verified on 3.0.65):
// an element without whitespace is rejected as "Unknown command or unquoted prompt", so one space
// is appended; an element starting with "-" is parsed as an option, so one space is prepended.
// The model sees the prompt with that extra space, which does not change its meaning.
func PromptArg(p string) string {
	if strings.HasPrefix(p, "-") {
		p = " " + p
	}
	if !strings.ContainsAny(p, " \t\n\r\v\f") {
		p += " "
	}
	return p
}

// Env returns the child's environment: base, then CLINE_NO_AUTO_UPDATE=1 (the seed: no update
// check or detached `npm update` from a bridge run) and CLINE_SESSION_BACKEND_MODE=local (run
// in-process, never spawn or use a detached hub daemon; docs/cline-cli.md "Backends"), then extra. A later entry
// replaces an earlier one with the same key, keeping the earlier position; the result has no
// duplicate keys (compared case-insensitively on Windows, as the OS does). New keys from extra
// are appended in sorted order so the result is deterministic.
func Env(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+2+len(extra))
	index := make(map[string]int, len(base)+2+len(extra))
	set := func(kv string) {
		k := envKey(kv)
		if i, ok := index[k]; ok {
			out[i] = kv
			return
		}
		index[k] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		set(kv)
	}
	set("CLINE_NO_AUTO_UPDATE=1")
	set("CLINE_SESSION_BACKEND_MODE=local")
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set(k + "=" + extra[k])
	}
	return out
}

// envKey is the name part of "KEY=value". Windows keeps per-drive entries like "=C:=C:\x", whose
// name starts with "=", so the search for the separator starts at index 1.
func envKey(kv string) string {
	k := kv
	if i := strings.IndexByte(kv[min(1, len(kv)):], '='); i >= 0 {
		k = kv[:i+min(1, len(kv))]
	}
	if runtime.GOOS == "windows" {
		k = strings.ToUpper(k)
	}
	return k
}
