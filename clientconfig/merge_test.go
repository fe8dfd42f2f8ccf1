package clientconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// otherContent is a file of each format with content a merge must keep: another server, a
// comment, a setting.
var otherContent = map[string]string{
	"json": "{\n\t// mine\n\t\"theme\": \"dark\",\n\t\"%s\": {\"web\": {\"url\": \"http://localhost:3000/mcp\"},},\n}\n",
	"toml": "# mine\nmodel = \"o3\"\n\n[%s.docs]\ncommand = \"docs-mcp\" # keep\n",
}

func decode(t *testing.T, format string, b []byte) map[string]any {
	t.Helper()
	m := map[string]any{}
	if format == "toml" {
		if err := toml.Unmarshal(b, &m); err != nil {
			t.Fatalf("not TOML: %v\n%s", err, b)
		}
		return m
	}
	std, err := hujson.Standardize(bytes.Clone(b))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	if err := json.Unmarshal(std, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMergeChangesOnlyTheEntry: for every client, Merge writes the entry, keeps the rest of the
// file (its comment too) and its mode, leaves a byte-for-byte backup, and a second Merge of the
// same entry changes nothing.
func TestMergeChangesOnlyTheEntry(t *testing.T) {
	for _, c := range Clients {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config")
			old := []byte(strings.ReplaceAll(otherContent[c.Format], "%s", c.Key))
			if err := os.WriteFile(path, old, 0o640); err != nil {
				t.Fatal(err)
			}
			e := Entry{Command: "/bin/cline-mcp", Args: []string{"--isolation=docker"}}
			res, err := Merge(c, path, "cline", e)
			if err != nil || res.Unchanged || res.Backup == "" {
				t.Fatalf("Merge: %+v %v", res, err)
			}
			got, _ := os.ReadFile(path)
			before, after := decode(t, c.Format, old), decode(t, c.Format, got)
			entry := TakeEntry(after, c.Key, "cline", EntryValue(c, e))
			if !reflect.DeepEqual(normalize(entry), normalize(EntryValue(c, e))) || !reflect.DeepEqual(before, after) {
				t.Errorf("entry %v; rest before %v, after %v", entry, before, after)
			}
			if !bytes.Contains(got, []byte("mine")) {
				t.Errorf("the comment was lost:\n%s", got)
			}
			if b, _ := os.ReadFile(res.Backup); !bytes.Equal(b, old) {
				t.Errorf("backup %s differs from the old file", res.Backup)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want the old file's 0640", st.Mode().Perm())
			}
			again, err := Merge(c, path, "cline", e)
			if b, _ := os.ReadFile(path); err != nil || !again.Unchanged || !bytes.Equal(b, got) {
				t.Errorf("a second merge changed the file or said so: %+v %v", again, err)
			}
		})
	}
}
