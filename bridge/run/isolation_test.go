package run

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/redact"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestIsolationPerAttempt: where each attempt runs (Floor, the call's choice, RetryIsolation),
// and the settings discipline of each: a default host run holds the user's file from Begin to
// End; an override or a container works on a private copy made before its run and merged back
// and closed after it — under the call's own hold when a container retries a default host call.
// Docker that is unavailable fails the call (or the attempt) with launch_failed; the host is
// never used instead.
func TestIsolationPerAttempt(t *testing.T) {
	cases := []struct {
		name      string
		floor     sandbox.Isolation
		retry     sandbox.Isolation
		call      sandbox.Isolation
		override  bool
		noDocker  bool
		dockerErr error
		steps     func(t *testing.T) []step
		want      result
		events    []string
		message   string
	}{
		{name: "host default", steps: func(t *testing.T) []step { return []step{pong(t)} },
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"settings.Begin", "host.Run", "hold.End"}},
		{name: "host override works on a copy", override: true, steps: func(t *testing.T) []step { return []step{pong(t)} },
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"settings.HostCopy", "host.Run", "settings.MergeAllowed", "copy.Close"}},
		{name: "host override retried gets a fresh copy", override: true,
			steps:  func(t *testing.T) []step { return []step{rateLimited(t), pong(t)} },
			want:   result{ok: true, attempts: 2, isolation: []sandbox.Isolation{host, host}},
			events: []string{"settings.HostCopy", "host.Run", "settings.MergeAllowed", "copy.Close", "backoff", "settings.HostCopy", "host.Run", "settings.MergeAllowed", "copy.Close"}},
		{name: "docker requested", call: dock, steps: func(t *testing.T) []step { return []step{pong(t)} },
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}},
			events: []string{"settings.EnsureFresh", "settings.PrivateCopy", "git.Open", "docker.Run", "settings.MergeAllowed", "copy.Close"}},
		{name: "floor docker overrides a host request", floor: dock, call: host, steps: func(t *testing.T) []step { return []step{pong(t)} },
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}},
			events: []string{"settings.EnsureFresh", "settings.PrivateCopy", "git.Open", "docker.Run", "settings.MergeAllowed", "copy.Close"}},
		{name: "retry escalates host to docker, merging under the call's hold", retry: dock,
			steps: func(t *testing.T) []step { return []step{rateLimited(t), pong(t)} },
			want:  result{ok: true, attempts: 2, isolation: []sandbox.Isolation{host, dock}},
			events: []string{"settings.Begin", "host.Run", "backoff",
				"hold.EnsureFresh", "settings.PrivateCopy", "git.Open", "docker.Run", "hold.MergeAllowed", "copy.Close", "hold.End"}},
		{name: "retry isolation below the first attempt's is ignored", retry: host, call: dock,
			steps: func(t *testing.T) []step { return []step{rateLimited(t), pong(t)} },
			want:  result{ok: true, attempts: 2, isolation: []sandbox.Isolation{dock, dock}},
			events: []string{"settings.EnsureFresh", "settings.PrivateCopy", "git.Open", "docker.Run", "settings.MergeAllowed", "copy.Close", "backoff",
				"settings.EnsureFresh", "settings.PrivateCopy", "git.Open", "docker.Run", "settings.MergeAllowed", "copy.Close"}},
		{name: "retry isolation docker after a docker attempt stays docker", retry: dock, call: dock,
			steps: func(t *testing.T) []step { return []step{rateLimited(t), rateLimited(t)} },
			want:  result{kind: "transient_provider_error", attempts: 2, isolation: []sandbox.Isolation{dock, dock}, retryable: true},
			events: []string{"settings.EnsureFresh", "settings.PrivateCopy", "git.Open", "docker.Run", "settings.MergeAllowed", "copy.Close", "backoff",
				"settings.EnsureFresh", "settings.PrivateCopy", "git.Open", "docker.Run", "settings.MergeAllowed", "copy.Close"}},
		{name: "docker requested but unavailable", call: dock, noDocker: true,
			dockerErr: &sandbox.LaunchError{Op: "docker ping", Hint: "start Docker Desktop", Err: errors.New("no engine")},
			steps:     func(t *testing.T) []step { return nil },
			want:      result{kind: "launch_failed"},
			message:   "start Docker Desktop; the server never falls back to the host"},
		{name: "docker floor but not configured", floor: dock, noDocker: true,
			steps:   func(t *testing.T) []step { return nil },
			want:    result{kind: "launch_failed"},
			message: "unavailable: not configured (start the Docker engine"},
		{name: "docker retry unavailable fails the attempt, no host fallback", retry: dock, noDocker: true,
			steps: func(t *testing.T) []step { return []step{rateLimited(t)} },
			want:  result{kind: "launch_failed", attempts: 2, isolation: []sandbox.Isolation{host, dock}},
			events: []string{"settings.Begin", "host.Run", "backoff",
				"hold.EnsureFresh", "settings.PrivateCopy", "git.Open", "hold.MergeAllowed", "copy.Close", "hold.End"},
			message: "Docker isolation is unavailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t, tc.steps(t)...)
				h.cfg.Floor, h.cfg.RetryIsolation = tc.floor, tc.retry
				if tc.noDocker {
					h.cfg.Docker, h.cfg.DockerErr = nil, tc.dockerErr
				}
				c := h.call(AskCline)
				c.Isolation = tc.call
				if tc.override {
					c.Provider, c.Model = "openai", "gpt-test"
				}
				res := h.do(t.Context(), c)
				wantResult(t, res, tc.want)
				wantEvents(t, h, tc.events...)
				wantContains(t, "message", res.Message, tc.message)
				if tc.want.attempts == 0 {
					want := tc.call
					if tc.floor != "" {
						want = tc.floor
					}
					if res.Isolation != want {
						t.Errorf("isolation %q, want %q", res.Isolation, want)
					}
				}
			})
		})
	}
}

// TestHostOverrideSpec: a host override run reads the copy, never the user's file, and a copy's
// path names the copy's own file.
func TestHostOverrideSpec(t *testing.T) {
	h := newHarness(t, pong(t))
	c := h.call(AskCline)
	c.Provider = "openai"
	res := h.do(t.Context(), c)
	wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
	runs := h.cli.runs()
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	got := envOf(runs[0], "CLINE_PROVIDER_SETTINGS_PATH")
	if len(h.set.copies) != 1 || got != h.set.copies[0].SettingsPath {
		t.Errorf("CLINE_PROVIDER_SETTINGS_PATH=%q, want the copy's file", got)
	}
	if !slices.Contains(runs[0].Args, "openai") {
		t.Errorf("args %q do not name the provider", runs[0].Args)
	}
}

// TestDockerSpec: a container run gets the copy as its data dir, no host secret but the
// variables named by DockerEnv, the cwd read-only (ask_cline outside a repository), and an open
// network is reported.
func TestDockerSpec(t *testing.T) {
	h := newHarness(t, pong(t))
	h.cfg.DockerEnv = []string{"OPENAI_API_KEY"}
	h.cfg.DockerEgress = sandbox.EgressOpen
	c := h.call(AskCline)
	c.Isolation = dock
	res := h.do(t.Context(), c)
	wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}})
	wantWarning(t, res, "network was open")
	spec := h.cli.runs()[0]
	cp := h.set.copies[0]
	if envOf(spec, "CLINE_DATA_DIR") != cp.Dir || envOf(spec, "HOME") != containerHome {
		t.Errorf("env %q: want CLINE_DATA_DIR of the copy and the container's HOME", spec.Env)
	}
	if envOf(spec, "OPENAI_API_KEY") != envSecret {
		t.Errorf("the DockerEnv variable was not passed")
	}
	if !slices.ContainsFunc(spec.Mounts, func(m sandbox.Mount) bool { return m.Source == h.cwd && m.ReadOnly }) {
		t.Errorf("mounts %+v: want the cwd read-only", spec.Mounts)
	}
	if !slices.ContainsFunc(spec.Mounts, func(m sandbox.Mount) bool { return m.Source == cp.Dir && !m.ReadOnly }) {
		t.Errorf("mounts %+v: want the settings copy", spec.Mounts)
	}

	h = newHarness(t, pong(t))
	res = h.do(t.Context(), Call{Tool: AskCline, Prompt: "x", Cwd: h.cwd, TimeoutSeconds: 60, Isolation: dock})
	if envOf(h.cli.runs()[0], "OPENAI_API_KEY") != "" {
		t.Errorf("a host secret reached the container without DockerEnv")
	}
	if hasWarning(res, "network was open") {
		t.Errorf("warned of an open network in the default egress mode: %q", res.Warnings)
	}
}

// TestSettingsFailures: a copy that cannot be made is launch_failed before any run; the warnings
// of the hold's End reach the result.
func TestSettingsFailures(t *testing.T) {
	h := newHarness(t)
	h.set.copyErr = errors.New("disk full")
	c := h.call(AskCline)
	c.Model = "m"
	res := h.do(t.Context(), c)
	wantResult(t, res, result{kind: "launch_failed", attempts: 1, isolation: []sandbox.Isolation{host}})
	wantContains(t, "message", res.Message, "copy Cline's settings for the override: disk full")
	wantEvents(t, h, "settings.HostCopy")

	h = newHarness(t, pong(t))
	h.set.endWarn = "restored the openai block the CLI dropped"
	res = h.do(t.Context(), h.call(AskCline))
	wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
	wantWarning(t, res, "restored the openai block")
}

// TestDockerFreshToken: before a container run the host makes sure the OAuth token outlives it
// (settings.EnsureFresh). A token that cannot be made to is launch_failed before any copy or
// run, never retried, naming the provider and the fix; a refresh's warnings reach the result.
func TestDockerFreshToken(t *testing.T) {
	h := newHarness(t)
	h.set.freshErr = &settings.AuthError{Provider: "cline", Reason: "the refresh was rejected (HTTP 401)"}
	c := h.call(AskCline)
	c.Isolation = dock
	res := h.do(t.Context(), c)
	wantResult(t, res, result{kind: "launch_failed", attempts: 1, isolation: []sandbox.Isolation{dock}})
	wantContains(t, "message", res.Message, "provider \"cline\"")
	wantContains(t, "message", res.Message, "`cline auth cline`")
	wantEvents(t, h, "settings.EnsureFresh")

	h = newHarness(t, pong(t))
	h.set.fresh = settings.Fresh{Refreshed: "cline", Warnings: []string{"settings: the new token expires soon"}, Secrets: []string{"workos:fresh-token-0123456789"}}
	res = h.do(t.Context(), c)
	wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}})
	wantWarning(t, res, "the new token expires soon")
	if !slices.ContainsFunc(h.progressed(), func(m string) bool { return strings.Contains(m, "refreshed the OAuth token of cline") }) {
		t.Errorf("progress %q does not say the token was refreshed", h.progressed())
	}
}

// TestLearnedSecrets: the credential values a call learns — the tokens of a host refresh and what
// the run's settings copy held afterwards — are redacted from everything the call returns.
func TestLearnedSecrets(t *testing.T) {
	h := newHarness(t)
	h.set.fresh = settings.Fresh{Refreshed: "cline", Secrets: []string{"workos:fresh-token-0123456789"}}
	c := h.call(AskCline)
	k := &prep{Call: &c, r: h.runner(), progress: h.progress, red: newSecrets(redact.New(nil))}
	var a attempt
	if err := k.freshToken(t.Context(), &a); err != nil {
		t.Fatal(err)
	}
	cp, err := h.set.PrivateCopy(h.tmp, settings.Override{})
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"providers":{"cline":{"settings":{"auth":{"accessToken":"token-the-run-wrote-0123456789"}}}}}`
	if err := os.WriteFile(cp.SettingsPath, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	k.mergeBack(cp, &a, true)
	for _, v := range []string{"fresh-token-0123456789", "token-the-run-wrote-0123456789"} {
		if got := k.red.Text("answer: " + v); strings.Contains(got, v) {
			t.Errorf("%q was not learned: %q", v, got)
		}
	}
}
