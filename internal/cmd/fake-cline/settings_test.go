package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var updatedAtRe = regexp.MustCompile(`"updatedAt": "([^"]*)"`)

// normalizeUpdatedAt replaces every updatedAt that differs from the seeded value by NOW.
func normalizeUpdatedAt(s string) string {
	return updatedAtRe.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Contains(m, "2026-01-01T00:00:00.000Z") {
			return m
		}
		return `"updatedAt": "NOW"`
	})
}

func TestProvidersRewriteMatchesRecordings(t *testing.T) {
	tests := []struct {
		rec   string
		extra []string
	}{
		{"a_text_pong", nil},
		{"o_provider_override", []string{"-P", "openai-native", "-m", "gpt-fake"}},
		{"o_model_override", []string{"-m", "fake-model-2"}},
		{"o_provider_override_unconfigured", []string{"-P", "lmstudio", "-m", "some-model"}},
		{"o_invalid_providers_json_entry", nil},
	}
	for _, tt := range tests {
		t.Run(tt.rec, func(t *testing.T) {
			w := newWorkspace(t, tt.rec)
			args := w.args(append(append([]string{"--auto-approve", "false"}, tt.extra...), "Reply with the word PONG")...)
			r := runFake(t, invocation{args: args})
			if r.code != 0 {
				t.Fatalf("got exit %d, stderr %s", r.code, r.stderr)
			}
			path := filepath.Join(w.data, "settings", "providers.json")
			got := normalizeUpdatedAt(readFile(t, path))
			want := normalizeUpdatedAt(readFile(t, filepath.Join("testdata", "recordings", tt.rec, "providers.after.json")))
			if got != want {
				t.Errorf("providers.json\ngot:\n%s\nwant:\n%s", got, want)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("got mode %v, want 0600", st.Mode().Perm())
			}
		})
	}
}

func TestProvidersCreatedWithPrivateDirs(t *testing.T) {
	w := newWorkspace(t, "")
	r := runFake(t, invocation{args: w.args("Reply with the word PONG")})
	if r.code != 0 {
		t.Fatalf("got exit %d", r.code)
	}
	got := normalizeUpdatedAt(readFile(t, filepath.Join(w.data, "settings", "providers.json")))
	want := `{
  "version": 1,
  "lastUsedProvider": "cline",
  "modes": {},
  "providers": {
    "cline": {
      "settings": {
        "provider": "cline",
        "model": "aion-labs/aion-3.5"
      },
      "updatedAt": "NOW",
      "tokenSource": "manual"
    }
  }
}
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, d := range []string{w.data, filepath.Join(w.data, "settings")} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s: got mode %v, want 0700", d, st.Mode().Perm())
		}
	}
	if !strings.Contains(r.stdout, `"model":{"id":"aion-labs/aion-3.5","provider":"cline","info":{`) {
		t.Errorf("run_result model lacks the cline catalog info: %s", r.stdout)
	}
}

func TestResolvePaths(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name          string
		cfg           config
		getenv        func(string) string
		wantProviders string
		wantGlobal    string
	}{
		{"data-dir relative to -c overrides env", config{cwd: "/w/repo", dataDir: "../d"}, env("CLINE_PROVIDER_SETTINGS_PATH", "/x/p.json", "HOME", "/h"),
			"/w/d/settings/providers.json", "/w/d/settings/global-settings.json"},
		{"provider settings env", config{}, env("CLINE_PROVIDER_SETTINGS_PATH", "/x/p.json", "HOME", "/h"),
			"/x/p.json", "/h/.cline/data/settings/global-settings.json"},
		{"data dir env", config{}, env("CLINE_DATA_DIR", "/dd", "HOME", "/h"), "/dd/settings/providers.json", "/dd/settings/global-settings.json"},
		{"cline dir env", config{}, env("CLINE_DIR", "/cd"), "/cd/data/settings/providers.json", "/cd/data/settings/global-settings.json"},
		{"config flag beats CLINE_DIR", config{configDir: "/cfg"}, env("CLINE_DIR", "/cd"), "/cfg/data/settings/providers.json", "/cfg/data/settings/global-settings.json"},
		{"home", config{}, env("HOME", "/h"), "/h/.cline/data/settings/providers.json", "/h/.cline/data/settings/global-settings.json"},
		{"no home falls back to /tmp", config{}, env(), "/tmp/.cline/data/settings/providers.json", "/tmp/.cline/data/settings/global-settings.json"},
		{"global settings env", config{dataDir: "/d"}, env("CLINE_GLOBAL_SETTINGS_PATH", "/g.json"), "/d/settings/providers.json", "/g.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := resolvePaths(&tt.cfg, tt.getenv, "/proc-cwd")
			if p.providers != tt.wantProviders || p.global != tt.wantGlobal {
				t.Errorf("got %s, %s; want %s, %s", p.providers, p.global, tt.wantProviders, tt.wantGlobal)
			}
		})
	}
}

func TestTokenRefreshKeepsOtherFields(t *testing.T) {
	w := newWorkspace(t, "o_provider_override")
	rec := filepath.Join(w.root, "record.jsonl")
	r := runFake(t, invocation{args: w.args("Reply fake:token_refresh?token=tok-123"), env: []string{"FAKE_CLINE_RECORD=" + rec}})
	if r.code != 0 {
		t.Fatalf("got exit %d", r.code)
	}
	got := readFile(t, filepath.Join(w.data, "settings", "providers.json"))
	if !strings.Contains(got, `"auth": {
          "accessToken": "tok-123"
        }`) || !strings.Contains(got, `"apiKey": "sk-test-native"`) {
		t.Errorf("providers.json lacks the refreshed token or lost a key:\n%s", got)
	}
	if !strings.Contains(readFile(t, rec), `"refreshedToken":"tok-123"`) {
		t.Errorf("RECORD lacks refreshedToken")
	}
}

// TestTokenRefreshOfAnotherProviderAndRecordOfWhatItSaw: id= picks the provider whose token is
// refreshed; RECORD says which provider and model the run resolved.
func TestTokenRefreshOfAnotherProviderAndRecordOfWhatItSaw(t *testing.T) {
	w := newWorkspace(t, "o_provider_override")
	rec := filepath.Join(w.root, "record.jsonl")
	r := runFake(t, invocation{args: w.args("-m", "m-x", "Reply fake:token_refresh?token=tok-456&id=openai-native"), env: []string{"FAKE_CLINE_RECORD=" + rec}})
	if r.code != 0 {
		t.Fatalf("got exit %d", r.code)
	}
	got := readFile(t, filepath.Join(w.data, "settings", "providers.json"))
	if !strings.Contains(got, `"accessToken": "tok-456"`) || strings.Count(got, "accessToken") != 1 {
		t.Errorf("want only openai-native's token set:\n%s", got)
	}
	line := readFile(t, rec)
	if !strings.Contains(line, `"provider":"openai-compatible","model":"m-x"`) {
		t.Errorf("RECORD lacks what the run resolved: %s", line)
	}
}

// TestWaitFileAndCountDir: a run with wait_file= does not answer before the file exists; runs
// sharing count_dir= record how many were running when each started.
func TestWaitFileAndCountDir(t *testing.T) {
	w := newWorkspace(t, "a_text_pong")
	rec := filepath.Join(w.root, "record.jsonl")
	release := filepath.Join(w.root, "release")
	count := filepath.Join(w.root, "running")
	prompt := "Reply fake:pong?wait_file=" + release + "&count_dir=" + count
	done := make(chan result, 2)
	for range 2 {
		go func() {
			done <- runFake(t, invocation{args: w.args(prompt), env: []string{"FAKE_CLINE_RECORD=" + rec}})
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(readFileOr(rec), "\n") < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the runs never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("a run finished before its wait_file existed (exit %d)", r.code)
	default:
	}
	writeFile(t, release, "")
	for range 2 {
		if r := <-done; r.code != 0 || !strings.Contains(r.stdout, "PONG") {
			t.Errorf("got exit %d, stdout %q", r.code, r.stdout)
		}
	}
	lines := readFile(t, rec)
	if !strings.Contains(lines, `"concurrent":2`) {
		t.Errorf("no run counted the other one:\n%s", lines)
	}
	if ents, _ := os.ReadDir(count); len(ents) != 0 {
		t.Errorf("marks left in count_dir: %d", len(ents))
	}
}

func readFileOr(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
