package mcpsession

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// ProvidersTwo is a Cline providers.json with the default provider of the recordings
// (a_text_pong/providers.before.json) plus a second configured provider with saved tracked
// fields (model, reasoning), so override runs have values to restore, signed in with OAuth
// (auth tokens), so a token refresh in a container has a credential to refresh — a Docker run
// merges back only refreshed credentials of a provider that had one.
const ProvidersTwo = `{
  "version": 1,
  "lastUsedProvider": "openai-compatible",
  "modes": {},
  "providers": {
    "openai-compatible": {
      "settings": {
        "provider": "openai-compatible",
        "apiKey": "sk-test-123",
        "model": "fake-model",
        "baseUrl": "http://127.0.0.1:18080/v1"
      },
      "updatedAt": "2026-01-01T00:00:00.000Z",
      "tokenSource": "manual"
    },
    "openai-native": {
      "settings": {
        "provider": "openai-native",
        "apiKey": "sk-native-456",
        "model": "gpt-saved",
        "reasoning": {
          "effort": "low"
        },
        "auth": {
          "accessToken": "tok-saved",
          "refreshToken": "rt-saved",
          "expiresAt": 1767225600000
        }
      },
      "updatedAt": "2026-01-01T00:00:00.000Z",
      "tokenSource": "oauth"
    }
  }
}
`

// Record is one fake-cline invocation as FAKE_CLINE_RECORD saw it (internal/cmd/fake-cline/doc.go).
type Record struct {
	PID                int               `json:"pid"`
	PGID               int               `json:"pgid"`
	PPID               int               `json:"ppid"`
	Argv               []string          `json:"argv"`
	Cwd                string            `json:"cwd"`
	Env                map[string]string `json:"env"`
	EnvKeys            []string          `json:"envKeys"`
	Stdin              string            `json:"stdin"`
	ProvidersPath      string            `json:"providersPath"`
	GlobalSettingsPath string            `json:"globalSettingsPath"`
	Scenario           string            `json:"scenario"`
	StartedAt          time.Time         `json:"startedAt"`
	RefreshedToken     string            `json:"refreshedToken"`
	Provider           string            `json:"provider"`   // what the run resolved
	Model              string            `json:"model"`      // what the run resolved
	Concurrent         int               `json:"concurrent"` // runs marked in count_dir= at its start
}

// ReadRecords reads a FAKE_CLINE_RECORD file; a missing file means no invocation yet. A last line
// without its newline is a record being written right now (a reader may see part of a concurrent
// write): it is left for the next read.
func ReadRecords(t testing.TB, path string) []Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// ChangedFiles maps path → status from an apply_cline_edits result's changedFiles.
func ChangedFiles(sc map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := sc["changedFiles"].([]any)
	for _, f := range list {
		m, _ := f.(map[string]any)
		p, _ := m["path"].(string)
		s, _ := m["status"].(string)
		out[p] = s
	}
	return out
}

// ReadJSON reads a JSON object file, failing the test when it is missing or corrupt (a
// settings file must stay valid whatever the runs did).
func ReadJSON(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s is not valid JSON: %v\n%s", path, err, b)
	}
	return m
}

// WriteSettings writes a providers.json with the mode the CLI gives it (0600).
func WriteSettings(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
