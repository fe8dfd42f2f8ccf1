package main

import (
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// recordInfo is what one invocation appends to $FAKE_CLINE_RECORD (one JSON line).
type recordInfo struct {
	args       []string
	stdin      string
	paths      *paths
	scenario   string
	params     url.Values
	attempt    int
	token      string
	usageError string
	started    time.Time
	// provider and model are what the run resolved from its flags and settings file.
	provider, model string
	// concurrent is how many invocations sharing count_dir= ran at this one's start (itself included).
	concurrent int
}

// enterCountDir marks this invocation as running in dir (a file named by its pid) and returns how
// many marks are there now, itself included, and the function that removes its mark. Two
// invocations starting together both count each other.
func enterCountDir(dir string) (int, func()) {
	mark := filepath.Join(dir, strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, func() {}
	}
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		return 0, func() {}
	}
	ents, _ := os.ReadDir(dir)
	return len(ents), func() { _ = os.Remove(mark) }
}

// writeRecord appends the RECORD line; it does nothing when FAKE_CLINE_RECORD is unset. The line
// is one write(2) on an O_APPEND file, so concurrent invocations do not interleave.
func writeRecord(r recordInfo) {
	path := os.Getenv("FAKE_CLINE_RECORD")
	if path == "" {
		return
	}
	cwd, _ := os.Getwd()
	pgid := processGroup()
	var keys []string
	env := obj{}
	for _, e := range os.Environ() {
		k, v, _ := strings.Cut(e, "=")
		keys = append(keys, k)
		if strings.HasPrefix(k, "CLINE_") {
			env = append(env, kv{k, v})
		}
	}
	sort.Strings(keys)
	sort.Slice(env, func(i, j int) bool { return env[i].k < env[j].k })
	params := obj{}
	pk := make([]string, 0, len(r.params))
	for k := range r.params {
		pk = append(pk, k)
	}
	sort.Strings(pk)
	for _, k := range pk {
		params = append(params, kv{k, r.params.Get(k)})
	}
	argv := append([]string{os.Args[0]}, r.args...)
	line := obj{
		{"pid", os.Getpid()}, {"pgid", pgid}, {"ppid", os.Getppid()}, {"argv", argv}, {"cwd", cwd},
		{"env", env}, {"envKeys", keys}, {"stdin", r.stdin},
	}
	if r.paths != nil {
		line = append(line, kv{"workDir", r.paths.workDir}, kv{"dataDir", r.paths.dataDir},
			kv{"providersPath", r.paths.providers}, kv{"globalSettingsPath", r.paths.global})
	}
	line = append(line, kv{"scenario", r.scenario}, kv{"params", params})
	if r.provider != "" {
		line = append(line, kv{"provider", r.provider}, kv{"model", r.model})
	}
	if r.concurrent > 0 {
		line = append(line, kv{"concurrent", r.concurrent})
	}
	if r.attempt > 0 {
		line = append(line, kv{"attempt", r.attempt})
	}
	if r.token != "" {
		line = append(line, kv{"refreshedToken", r.token})
	}
	if r.usageError != "" {
		line = append(line, kv{"usageError", r.usageError})
	}
	line = append(line, kv{"startedAt", isoTime(r.started)})
	b := append(appendJSON(nil, line), '\n')
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	_, _ = f.Write(b)
	_ = f.Close()
}
