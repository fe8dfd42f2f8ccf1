package settings

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const memPath = "/home/u/.cline/data/settings/providers.json"

// secrets are values from the fixtures that must never show up in a warning.
var secrets = []string{"sk-test-123", "sk-test-native", "sk-other-456", "at-old", "at-new", "rt-old", "rt-new"}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// edit applies fn to a parsed copy of data and re-encodes it the way the CLI would.
func edit(t *testing.T, data []byte, fn func(o *object)) []byte {
	t.Helper()
	o, err := parseObject(data)
	if err != nil {
		t.Fatal(err)
	}
	fn(o)
	return o.encode()
}

// setPath sets a dotted path, creating objects on the way; v is any Go value JSON can express.
func setPath(o *object, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next := o.getObject(p)
		if next == nil {
			next = newObject()
			o.set(p, next)
		}
		o = next
	}
	o.set(parts[len(parts)-1], jsonValue(v))
}

func delPath(o *object, path string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		if o = o.getObject(p); o == nil {
			return
		}
	}
	o.del(parts[len(parts)-1])
}

func jsonValue(v any) any {
	if s, ok := v.(string); ok {
		return s
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	o, err := parseObject([]byte(`{"v":` + string(data) + `}`))
	if err != nil {
		panic(err)
	}
	return o.vals["v"]
}

func memStore(t *testing.T) (*Store, *faultFS) {
	t.Helper()
	fs := newFaultFS(afero.NewMemMapFs())
	if err := fs.MkdirAll("/tmp", 0o777); err != nil {
		t.Fatal(err)
	}
	return &Store{FS: fs, Path: memPath, TempDir: "/tmp"}, fs
}

func put(t *testing.T, s *Store, data []byte) {
	t.Helper()
	if err := s.FS.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := afero.WriteFile(s.FS, s.Path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s *Store) []byte {
	t.Helper()
	data, err := afero.ReadFile(s.FS, s.Path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func checkWarnings(t *testing.T, got []string, want []string) {
	t.Helper()
	for _, g := range got {
		t.Logf("warning: %s", g)
	}
	if len(got) != len(want) {
		t.Fatalf("got warnings %q, want %d matching %q", got, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("got warning %q, want it to contain %q", got[i], w)
		}
	}
	for _, g := range got {
		for _, sec := range secrets {
			if strings.Contains(g, sec) {
				t.Errorf("warning %q leaks a secret value", g)
			}
		}
	}
}

// checkNoLeftovers: no temp file beside providers.json, no private copy left in the temp dir.
func checkNoLeftovers(t *testing.T, s *Store) {
	t.Helper()
	for _, dir := range []string{filepath.Dir(s.Path), s.TempDir} {
		entries, err := afero.ReadDir(s.FS, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != filepath.Base(s.Path) {
				t.Errorf("got leftover %s in %s, want none", e.Name(), dir)
			}
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("got\n%s\nwant (%s)\n%s", got, path, want)
	}
}

// oauth adds an OAuth credential to a provider, as a provider signed in with OAuth would have.
func oauth(id, access, refresh string, expires int) func(o *object) {
	return func(o *object) {
		setPath(o, "providers."+id+".settings.auth", map[string]any{
			"accessToken": access, "refreshToken": refresh, "expiresAt": expires,
		})
		setPath(o, "providers."+id+".tokenSource", "oauth")
	}
}

// TestDefaultRunGuard: a default run works on the user's file; afterwards the bridge puts back only
// what the CLI lost (its invalid-entry wipe, fields its schema drops) and writes nothing otherwise.
func TestDefaultRunGuard(t *testing.T) {
	type tc struct {
		name     string
		before   []byte // nil: no file before the run
		after    []byte // what Cline left behind
		golden   string // "" = the file must stay exactly as Cline left it, with no write at all
		wantWarn []string
	}
	pong := testdata(t, "a_text_pong.before.json")
	pongAfter := testdata(t, "a_text_pong.after.json")
	tests := []tc{
		{name: "default run: no write (a_text_pong)", before: pong, after: pongAfter},
		{
			name:   "key override is kept, no write (o_key_override)",
			before: testdata(t, "o_key_override.before.json"), after: testdata(t, "o_key_override.after.json"),
		},
		{
			name:   "a refreshed token is Cline's to write: no write",
			before: edit(t, pong, oauth("openai-compatible", "at-old", "rt-old", 1)),
			after:  edit(t, pongAfter, oauth("openai-compatible", "at-new", "rt-new", 2)),
		},
		{name: "no file before: the file Cline created stays", before: nil, after: testdata(t, "o_no_providers_json.after.json")},
		{
			name:   "invalid-entry wipe (o_invalid_providers_json_entry)",
			before: testdata(t, "o_invalid_providers_json_entry.before.json"),
			after:  testdata(t, "o_invalid_providers_json_entry.after.json"), golden: "invalid_entry_wipe",
			wantWarn: []string{"dropped provider(s) openai-compatible, lmstudio"},
		},
		{
			name: "unknown fields dropped by the CLI are put back in place; key order kept",
			before: edit(t, pong, func(o *object) {
				setPath(o, "userNote", "keep me")
				setPath(o, "providers.openai-compatible.settings.customHeaderX", "1")
				o.keys = []string{"version", "userNote", "lastUsedProvider", "modes", "providers"}
			}),
			after:    pongAfter,
			golden:   "unknown_fields",
			wantWarn: []string{"dropped 2 field(s)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fs := memStore(t)
			if tt.before != nil {
				put(t, s, tt.before)
			}
			run, warns := begin(t, s)
			checkWarnings(t, warns, nil)
			put(t, s, tt.after) // Cline's run
			renamesBefore := fs.renames
			checkWarnings(t, run.End(context.Background()), tt.wantWarn)
			got := get(t, s)
			if tt.golden == "" {
				if string(got) != string(tt.after) {
					t.Errorf("got\n%s\nwant Cline's file unchanged\n%s", got, tt.after)
				}
				if fs.renames != renamesBefore {
					t.Errorf("got %d writes, want none", fs.renames-renamesBefore)
				}
			} else {
				golden(t, tt.golden, got)
				fi, err := s.FS.Stat(s.Path)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != 0o600 {
					t.Errorf("got mode %v, want 0600", got)
				}
			}
			checkNoLeftovers(t, s)
			if got := run.End(context.Background()); got != nil {
				t.Errorf("second End: got %q, want nil", got)
			}
		})
	}
}

// TestHostOverrideRecordings replays what the real CLI wrote in the override recordings into a
// HostCopy and merges it back: the user's file is never written (an override leaves no trace), except
// for a refreshed OAuth token, which is kept.
func TestHostOverrideRecordings(t *testing.T) {
	provBefore := testdata(t, "o_provider_override.before.json")
	provAfter := testdata(t, "o_provider_override.after.json")
	pong := testdata(t, "a_text_pong.before.json")
	pongAfter := testdata(t, "a_text_pong.after.json")
	tests := []struct {
		name          string
		ov            Override
		before, after []byte // the user's file before; what Cline left in the copy
		golden        string // "" = the user's file is not written at all
		wantWarn      []string
	}{
		{name: "provider override (o_provider_override)", ov: Override{"openai-native", "gpt-fake"}, before: provBefore, after: provAfter},
		{
			name: "model-only override (o_model_override)", ov: Override{Model: "fake-model-2"},
			before: testdata(t, "o_model_override.before.json"), after: testdata(t, "o_model_override.after.json"),
		},
		{
			name: "unconfigured provider: its new block stays in the copy (o_provider_override_unconfigured)", ov: Override{"lmstudio", "some-model"},
			before: testdata(t, "o_provider_override_unconfigured.before.json"), after: testdata(t, "o_provider_override_unconfigured.after.json"),
		},
		{name: "no file before: none after (o_no_providers_json)", ov: Override{"cline", "x"}, after: testdata(t, "o_no_providers_json.after.json")},
		{
			name: "model absent before stays absent", ov: Override{Model: "m2"},
			before: edit(t, pong, func(o *object) { delPath(o, "providers.openai-compatible.settings.model") }),
			after:  edit(t, pongAfter, func(o *object) { setPath(o, "providers.openai-compatible.settings.model", "m2") }),
		},
		{
			name: "reasoning added by the run stays in the copy", ov: Override{"openai-compatible", "m2"},
			before: edit(t, pong, func(o *object) { delPath(o, "lastUsedProvider") }),
			after: edit(t, pongAfter, func(o *object) {
				setPath(o, "providers.openai-compatible.settings.model", "m2")
				setPath(o, "providers.openai-compatible.settings.reasoning", map[string]any{"effort": "high"})
			}),
		},
		{
			name: "provider override refreshes an oauth token and changes reasoning: only the token comes home",
			ov:   Override{"openai-native", "gpt-fake"},
			before: edit(t, provBefore, func(o *object) {
				oauth("openai-native", "at-old", "rt-old", 1)(o)
				setPath(o, "providers.openai-native.settings.reasoning", map[string]any{"effort": "low"})
			}),
			after: edit(t, provAfter, func(o *object) {
				oauth("openai-native", "at-new", "rt-new", 2)(o)
				setPath(o, "providers.openai-native.settings.reasoning", map[string]any{"effort": "high", "enabled": true})
			}),
			golden: "provider_override_token_refresh",
		},
		{
			name: "the CLI's invalid-entry wipe hits only the copy", ov: Override{Model: "m2"},
			before: testdata(t, "o_invalid_providers_json_entry.before.json"), after: testdata(t, "o_invalid_providers_json_entry.after.json"),
			wantWarn: []string{"dropped provider(s) openai-compatible, lmstudio from its private copy", "changed lastUsedProvider"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fs := memStore(t)
			if tt.before != nil {
				put(t, s, tt.before)
			}
			c, err := s.HostCopy("", tt.ov)
			if err != nil {
				t.Fatal(err)
			}
			checkWarnings(t, c.Warnings, nil)
			if tt.before != nil {
				if got := readMem(t, s, c.SettingsPath); string(got) != string(edit(t, tt.before, func(*object) {})) {
					t.Errorf("the host copy holds\n%s\nwant the whole user file", got)
				}
			}
			if err := afero.WriteFile(s.FS, c.SettingsPath, tt.after, 0o600); err != nil { // Cline's run
				t.Fatal(err)
			}
			checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), tt.wantWarn)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if tt.golden != "" {
				golden(t, tt.golden, get(t, s))
				return
			}
			if fs.renames != 0 {
				t.Errorf("got %d writes of the user's file, want none", fs.renames)
			}
			if tt.before == nil {
				if ok, _ := afero.Exists(s.FS, filepath.Dir(s.Path)); ok {
					t.Error("the run's new file reached the user's settings dir")
				}
				return
			}
			if got := get(t, s); string(got) != string(tt.before) {
				t.Errorf("got\n%s\nwant the user's file byte for byte\n%s", got, tt.before)
			}
			checkNoLeftovers(t, s)
		})
	}
}

func readMem(t *testing.T, s *Store, path string) []byte {
	t.Helper()
	data, err := afero.ReadFile(s.FS, path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConcurrentDefaultRunsRepairOnce: two default runs (sharing the read lock) both saw Cline wipe the file and
// end at the same moment. The guard serialises itself and re-reads before writing, so the providers come back
// once, the second run finds nothing to repair, and nothing either run's CLI wrote is lost.
func TestConcurrentDefaultRunsRepairOnce(t *testing.T) {
	s, fs := memStore(t)
	put(t, s, testdata(t, "o_invalid_providers_json_entry.before.json"))
	runA, _ := begin(t, s)
	runB, _ := begin(t, s)
	put(t, s, testdata(t, "o_invalid_providers_json_entry.after.json"))
	warns := make(chan []string, 2)
	for _, r := range []*Run{runA, runB} {
		go func() { warns <- r.End(context.Background()) }()
	}
	got := append(<-warns, <-warns...)
	checkWarnings(t, got, []string{"dropped provider(s) openai-compatible, lmstudio"})
	if fs.renames != 1 {
		t.Errorf("got %d writes, want 1", fs.renames)
	}
	golden(t, "invalid_entry_wipe", get(t, s))
	checkNoLeftovers(t, s)
}

// begin is Store.Begin for tests, which never cancel it.
func begin(t *testing.T, s *Store) (*Run, []string) {
	t.Helper()
	r, w, err := s.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// TestMergeWaitsForDefaultRuns: within the process, a merge-back that has a refreshed token to write
// waits until the default runs in flight have ended (their CLIs write the user's file), and a default
// run that arrives meanwhile waits behind it, or leaves when cancelled. A merge with nothing to write
// never waits.
func TestMergeWaitsForDefaultRuns(t *testing.T) {
	s, _ := memStore(t)
	put(t, s, edit(t, testdata(t, "a_text_pong.before.json"), oauth("openai-compatible", "at-old", "rt-old", 1)))
	idle, err := s.PrivateCopy("", Override{})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	c, err := s.HostCopy("", Override{Model: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put(t, &Store{FS: s.FS, Path: c.SettingsPath}, edit(t, c.snapshot, func(o *object) {
		setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
	}))

	run, _ := begin(t, s)
	checkWarnings(t, s.MergeAllowed(context.Background(), idle, nil), nil) // nothing to write: does not wait for the run
	merged := make(chan []string, 1)
	go func() { merged <- s.MergeAllowed(context.Background(), c, nil) }()
	for s.runs.queued() == 0 { // the merge is waiting
		runtime.Gosched()
	}
	ctx, cancel := context.WithCancel(context.Background())
	late := make(chan error, 1)
	go func() { _, _, err := s.Begin(ctx); late <- err }()
	for s.runs.queued() < 2 {
		runtime.Gosched()
	}
	cancel()
	if err := <-late; !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("a default run cancelled while it waited: got %v", err)
	}
	select {
	case w := <-merged:
		t.Fatalf("the merge wrote (%q) while a default run was in flight", w)
	default:
	}
	checkWarnings(t, run.End(context.Background()), nil)
	checkWarnings(t, <-merged, nil)
	if got := string(get(t, s)); !strings.Contains(got, "at-new") {
		t.Errorf("the refresh was not merged:\n%s", got)
	}
	again, _ := begin(t, s) // the hold is free again
	checkWarnings(t, again.End(context.Background()), nil)
}

// TestMergeGivesUpWhenItsContextEnds: a merge-back that waits for a default run stops waiting when
// its ctx ends (the run's epilogue is bounded), says so, and writes nothing; the run's hold and the
// user's file are as they were.
func TestMergeGivesUpWhenItsContextEnds(t *testing.T) {
	s, _ := memStore(t)
	put(t, s, edit(t, testdata(t, "a_text_pong.before.json"), oauth("openai-compatible", "at-old", "rt-old", 1)))
	c, err := s.HostCopy("", Override{Model: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put(t, &Store{FS: s.FS, Path: c.SettingsPath}, edit(t, c.snapshot, func(o *object) {
		setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
	}))
	before := string(get(t, s))
	run, _ := begin(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	merged := make(chan []string, 1)
	go func() { merged <- s.MergeAllowed(ctx, c, nil) }()
	for s.runs.queued() == 0 { // the merge is waiting for the run
		runtime.Gosched()
	}
	cancel()
	checkWarnings(t, <-merged, []string{"gave up waiting for the default runs"})
	if got := string(get(t, s)); got != before {
		t.Errorf("a merge that gave up wrote the file:\n%s", got)
	}
	checkWarnings(t, run.End(context.Background()), nil)
}
