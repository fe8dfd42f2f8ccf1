package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/clientconfig"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// setupHome points every per-user location at a fresh directory and returns it.
func setupHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("APPDATA", filepath.Join(home, "AppData", "Roaming"))
	for _, v := range []string{"CODEX_HOME", "CLAUDE_CONFIG_DIR", "CLINE_PROVIDER_SETTINGS_PATH", "CLINE_DATA_DIR", "CLINE_DIR"} {
		t.Setenv(v, "")
	}
	return home
}

func runSetupCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := realMain(append([]string{"setup"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// realFiles are each client's file as the client itself writes it, with content setup must keep.
var realFiles = map[string]string{
	// Claude Code's ~/.claude.json: projects, a user-scope server, settings
	"claude-code": `{"numStartups": 3, "projects": {"/src/app": {"allowedTools": [], "mcpServers": {}}},` +
		`"mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {"T": "x"}}},` +
		`"userID": "abc", "theme": "dark"}`,
	"claude-desktop": "{\n  \"mcpServers\": {\n    \"fs\": {\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n    }\n  },\n  \"globalShortcut\": \"Ctrl+Space\"\n}\n",
	"cursor":         `{"mcpServers": {"web": {"url": "http://localhost:3000/mcp"}}}`,
	// VS Code's mcp.json is JSON with comments and trailing commas
	"vscode": "{\n\t// my servers\n\t\"inputs\": [{\"type\": \"promptString\", \"id\": \"key\", \"password\": true},],\n\t\"servers\": {\n\t\t\"gh\": {\"type\": \"http\", \"url\": \"https://example.invalid/mcp\"}, // remote\n\t},\n}\n",
	"codex":  "# Codex settings\nmodel = \"o3\"\napproval_policy = \"never\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\" # keep this comment\nargs = [\"--x\"]\n\n[mcp_servers.cline]\ncommand = \"/old/cline-mcp\"\n\n[mcp_servers.cline.env]\nOLD = \"1\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n",
}

// decodeAny parses a client file (JSON with comments or TOML) into maps.
func decodeAny(t *testing.T, format string, b []byte) map[string]any {
	t.Helper()
	m := map[string]any{}
	if format == "toml" {
		if err := toml.Unmarshal(b, &m); err != nil {
			t.Fatalf("not TOML: %v\n%s", err, b)
		}
		return m
	}
	std, err := hujson.Standardize(append([]byte(nil), b...))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	if err := json.Unmarshal(std, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSetupMergesRealFiles: for every client, setup merges its entry into the client's real file
// format, at the client's per-user path, with the absolute path of the running binary and the
// flags given; everything else stays (comments too), a backup holds the old file byte for byte,
// and a second run changes nothing.
func TestSetupMergesRealFiles(t *testing.T) {
	exe, err := executablePath()
	if err != nil {
		t.Fatal(err)
	}
	for _, client := range clientconfig.Clients {
		t.Run(client.Name, func(t *testing.T) {
			home := setupHome(t)
			path, err := clientPath(client, &setupOptions{}, os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(path, home) {
				t.Fatalf("%s's file %s is outside HOME %s", client.Name, path, home)
			}
			old := []byte(realFiles[client.Name])
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, old, 0o640); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runSetupCmd(t, client.Name, "--isolation", "docker", "--egress-allow", "api.example.com:443", "--egress-allow", "*.example.org:443")
			if code != 0 {
				t.Fatalf("setup %s: exit %d: %s%s", client.Name, code, out, errOut)
			}
			if !strings.Contains(out, "Next:") || !strings.Contains(out, "cline auth") {
				t.Errorf("setup does not say what to do next (restart, cline auth):\n%s", out)
			}
			got, _ := os.ReadFile(path)
			before, after := decodeAny(t, client.Format, old), decodeAny(t, client.Format, got)
			want := clientconfig.EntryValue(client, clientconfig.Entry{Command: "x", Args: []string{}})
			entry := clientconfig.TakeEntry(after, client.Key, "cline", want).(map[string]any)
			clientconfig.TakeEntry(before, client.Key, "cline", want)
			if !equalJSON(before, after) {
				t.Errorf("setup changed more than the entry:\nbefore %v\nafter  %v", before, after)
			}
			if entry["command"] != exe {
				t.Errorf("command %v, want the running binary %s", entry["command"], exe)
			}
			wantArgs := []any{"--egress-allow=api.example.com:443", "--egress-allow=*.example.org:443", "--isolation=docker"}
			if !equalJSON(entry["args"], wantArgs) {
				t.Errorf("args %v, want %v", entry["args"], wantArgs)
			}
			if client.Format == "json" && bytes.Contains(old, []byte("// remote")) && !bytes.Contains(got, []byte("// remote")) {
				t.Errorf("a comment was lost:\n%s", got)
			}
			if client.Format == "toml" && !bytes.Contains(got, []byte("# keep this comment")) {
				t.Errorf("a comment was lost:\n%s", got)
			}
			backups, _ := filepath.Glob(path + ".*.bak")
			if len(backups) != 1 {
				t.Fatalf("backups %v, want one", backups)
			}
			if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, old) {
				t.Errorf("backup differs from the old file")
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want the old file's 0640", st.Mode().Perm())
			}
			code, out, _ = runSetupCmd(t, client.Name, "--isolation=docker", "--egress-allow=api.example.com:443", "--egress-allow=*.example.org:443")
			if again, _ := os.ReadFile(path); code != 0 || !bytes.Equal(again, got) || !strings.Contains(out, "nothing to change") {
				t.Errorf("a second run changed the file or said otherwise (exit %d):\n%s", code, out)
			}
		})
	}
}

// normalize makes decoded and built values comparable: through JSON, numbers as float64.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(normalize(a))
	y, _ := json.Marshal(normalize(b))
	return bytes.Equal(x, y)
}

// TestSetupNewFile: a client without a file gets a new one (directories made) holding the entry only.
func TestSetupNewFile(t *testing.T) {
	for _, client := range clientconfig.Clients {
		home := setupHome(t)
		code, out, errOut := runSetupCmd(t, client.Name)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s%s", client.Name, code, out, errOut)
		}
		path, _ := clientPath(client, &setupOptions{}, os.Getenv)
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(path, home) {
			t.Fatalf("%s: %s: %v", client.Name, path, err)
		}
		m := decodeAny(t, client.Format, b)
		if e, _ := clientconfig.TakeEntry(m, client.Key, "cline", clientconfig.EntryValue(client, clientconfig.Entry{})).(map[string]any); e == nil || len(m) != 0 {
			t.Errorf("%s: new file holds %s", client.Name, b)
		}
	}
}

// TestSetupRefusesUnparsableFile: a file setup cannot parse is left as it is, with no backup.
func TestSetupRefusesUnparsableFile(t *testing.T) {
	bad := map[string]string{"json": `{"mcpServers": {"x": }`, "toml": "[mcp_servers.x\ncommand = 1\n"}
	for _, client := range clientconfig.Clients {
		setupHome(t)
		path, _ := clientPath(client, &setupOptions{}, os.Getenv)
		os.MkdirAll(filepath.Dir(path), 0o700)
		os.WriteFile(path, []byte(bad[client.Format]), 0o600)
		code, _, errOut := runSetupCmd(t, client.Name)
		if code != 1 || !strings.Contains(errOut, "refusing") {
			t.Errorf("%s: exit %d, stderr %q; want 1 and a refusal", client.Name, code, errOut)
		}
		if b, _ := os.ReadFile(path); string(b) != bad[client.Format] {
			t.Errorf("%s: the file was changed", client.Name)
		}
		if backups, _ := filepath.Glob(path + ".*"); len(backups) != 0 {
			t.Errorf("%s: left %v", client.Name, backups)
		}
	}
}

// TestSetupRefusesOddShapes: a servers key that is not an object, and a TOML file that defines the
// entry with dotted keys, are refused rather than rewritten.
func TestSetupRefusesOddShapes(t *testing.T) {
	home := setupHome(t)
	cases := map[string]string{
		"cursor": `{"mcpServers": []}`,
		"codex":  "mcp_servers.cline.command = \"x\"\n",
	}
	for name, content := range cases {
		file := filepath.Join(home, name+".conf")
		os.WriteFile(file, []byte(content), 0o600)
		if code, _, errOut := runSetupCmd(t, name, "--config", file); code != 1 {
			t.Errorf("%s: exit %d (%s), want a refusal", name, code, errOut)
		}
		if b, _ := os.ReadFile(file); string(b) != content {
			t.Errorf("%s: the file was changed to %s", name, b)
		}
	}
}

// TestSetupPrintWritesNothing: --print shows the entry and leaves the disk alone.
func TestSetupPrintWritesNothing(t *testing.T) {
	for _, client := range clientconfig.Clients {
		home := setupHome(t)
		code, out, errOut := runSetupCmd(t, client.Name, "--print", "--docker-image", "my/cline:1")
		if code != 0 || !strings.Contains(out, "--docker-image=my/cline:1") {
			t.Fatalf("%s: exit %d:\n%s%s", client.Name, code, out, errOut)
		}
		if client.Format == "toml" && !strings.Contains(out, "approval_mode = \"approve\"") {
			t.Errorf("codex --print does not approve apply_cline_edits:\n%s", out)
		}
		entries, _ := os.ReadDir(home)
		for _, e := range entries {
			if e.Name() != ".config" && e.Name() != "AppData" {
				t.Errorf("%s --print wrote %s", client.Name, e.Name())
			}
		}
	}
}

// TestSetupRejectsBadInput: unknown clients, bad server flags and names are usage errors.
func TestSetupRejectsBadInput(t *testing.T) {
	setupHome(t)
	for _, args := range [][]string{{"emacs"}, {"cursor", "--isolation", "vm"}, {"cursor", "--name", "a b"}, {"cursor", "extra"}, {}} {
		if code, _, _ := runSetupCmd(t, args...); code != 2 {
			t.Errorf("setup %q: exit %d, want 2", args, code)
		}
	}
	if code, out, _ := runSetupCmd(t, "--help"); code != 0 || !strings.Contains(out, "claude-desktop") {
		t.Errorf("setup --help: exit %d:\n%s", code, out)
	}
}

// TestSetupIsDocumented: the setup command is in --help and every client in docs/install.md.
func TestSetupIsDocumented(t *testing.T) {
	var out bytes.Buffer
	realMain([]string{"--help"}, strings.NewReader(""), &out, io.Discard)
	if !strings.Contains(out.String(), "cline-mcp setup <client>") {
		t.Errorf("--help does not list setup:\n%s", out.String())
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clientconfig.Clients {
		if !strings.Contains(string(b), "cline-mcp setup "+c.Name) {
			t.Errorf("docs/install.md does not show cline-mcp setup %s", c.Name)
		}
	}
	for _, flag := range []string{"--print", "--name", "--config"} {
		if !strings.Contains(string(b), flag) {
			t.Errorf("docs/install.md does not document setup's %s", flag)
		}
	}
}

// TestSetupKeepsTheEntrysOtherFields: what the user added to an existing entry (env, a startup
// timeout, an env sub-table, a multi-line args array replaced whole) survives; only command, args
// (type) and Codex's tool_timeout_sec and approval are setup's.
func TestSetupKeepsTheEntrysOtherFields(t *testing.T) {
	home := setupHome(t)
	cases := map[string]struct{ content, want string }{
		"claude-code": {`{"mcpServers": {"cline": {"type": "stdio", "command": "/old", "args": ["--x"], "env": {"OPENAI_API_KEY": "sk-1"}}}}`,
			`"OPENAI_API_KEY": "sk-1"`},
		"codex": {"[mcp_servers.cline]\ncommand = \"/old\"\nargs = [\n  \"--x\",\n]\nstartup_timeout_sec = 20\n\n[mcp_servers.cline.env]\nOPENAI_API_KEY = \"sk-1\"\n\n[mcp_servers.cline.tools.apply_cline_edits]\napproval_mode = \"prompt\"\n",
			"startup_timeout_sec = 20"},
	}
	for name, c := range cases {
		file := filepath.Join(home, name+".conf")
		os.WriteFile(file, []byte(c.content), 0o600)
		if code, out, errOut := runSetupCmd(t, name, "--config", file, "--isolation", "docker"); code != 0 {
			t.Fatalf("%s: exit %d: %s%s", name, code, out, errOut)
		}
		b, _ := os.ReadFile(file)
		for _, w := range []string{c.want, "OPENAI_API_KEY", "--isolation=docker"} {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: %q lost or missing:\n%s", name, w, b)
			}
		}
		if strings.Contains(string(b), "/old") || strings.Contains(string(b), `"--x"`) || strings.Contains(string(b), `"prompt"`) {
			t.Errorf("%s: the old command, args or approval stayed:\n%s", name, b)
		}
	}
}

// TestBuildVersion: a linker-stamped version wins, else the module version of `go install …@v`,
// else dev (a checkout build records "(devel)").
func TestBuildVersion(t *testing.T) {
	mod := func(v string) *debug.BuildInfo { return &debug.BuildInfo{Main: debug.Module{Version: v}} }
	for _, c := range []struct {
		stamped string
		info    *debug.BuildInfo
		want    string
	}{
		{"v1.2.3", mod("v9.9.9"), "v1.2.3"},
		{"dev", mod("v1.4.0"), "v1.4.0"},
		{"", mod("v1.4.0"), "v1.4.0"},
		{"dev", mod("(devel)"), "dev"},
		{"dev", nil, "dev"},
	} {
		if got := buildVersion(c.stamped, c.info, c.info != nil); got != c.want {
			t.Errorf("buildVersion(%q, %v) = %q, want %q", c.stamped, c.info, got, c.want)
		}
	}
}

// TestSetupIntoAnEmptyServersTable: a file whose servers table exists but is empty (what Claude
// Code writes on its first start) gets the entry; the rest of the file is kept.
func TestSetupIntoAnEmptyServersTable(t *testing.T) {
	empty := map[string]string{"json": `{"numStartups": 7, "%s": {}}`, "toml": "model = \"x\"\n[%s]\n"}
	for _, client := range clientconfig.Clients {
		setupHome(t)
		path, _ := clientPath(client, &setupOptions{}, os.Getenv)
		_ = os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, []byte(fmt.Sprintf(empty[client.Format], client.Key)), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := runSetupCmd(t, client.Name); code != 0 {
			t.Errorf("%s: exit %d: %s%s", client.Name, code, out, errOut)
			continue
		}
		b, _ := os.ReadFile(path)
		m := decodeAny(t, client.Format, b)
		if e, _ := clientconfig.TakeEntry(m, client.Key, "cline", clientconfig.EntryValue(client, clientconfig.Entry{})).(map[string]any); e == nil {
			t.Errorf("%s: no entry in %s", client.Name, b)
		}
	}
}
