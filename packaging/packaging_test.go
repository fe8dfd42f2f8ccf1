package packaging

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

var update = flag.Bool("update", false, "rewrite the generated parts of server.json and mcpb/manifest.json from the built binary")

var bins mcpsession.Binaries

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "cline-mcp-packaging-")
	if err != nil {
		panic(err)
	}
	bins, err = mcpsession.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binaryFlag is one flag as the built binary's --help shows it.
type binaryFlag struct {
	name, kind, usage, def string
}

var (
	helpFlagLine = regexp.MustCompile(`^  -([a-z0-9-]+)(?: ([a-z]+))?$`)
	helpDefault  = regexp.MustCompile(` \(default "?(.*?)"?\)$`)
)

// binaryFlags are the flags of the built binary, from its --help.
func binaryFlags(t *testing.T) []binaryFlag {
	t.Helper()
	out, err := exec.Command(bins.ClineMCP, "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	var flags []binaryFlag
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		m := helpFlagLine.FindStringSubmatch(l)
		if m == nil || i+1 >= len(lines) {
			continue
		}
		f := binaryFlag{name: m[1], kind: m[2], usage: strings.TrimSpace(lines[i+1])}
		if d := helpDefault.FindStringSubmatch(f.usage); d != nil {
			f.def, f.usage = d[1], strings.TrimSuffix(f.usage, d[0])
		}
		flags = append(flags, f)
	}
	if len(flags) < 20 {
		t.Fatalf("found %d flags in --help; the test would prove little", len(flags))
	}
	return flags
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// writeJSON rewrites path (with -update) keeping two-space indentation and a final newline.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBundleManifestToolsAreTheServers: the bundle manifest lists exactly the tools the built
// server's tools/list advertises, with the same descriptions (go test ./packaging -update rewrites
// them).
func TestBundleManifestToolsAreTheServers(t *testing.T) {
	sess := mcpsession.Start(t, bins.ClineMCP, mcpsession.Options{Args: []string{"--cline", bins.FakeCline}, Dir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := sess.Client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, tool := range list.Tools {
		want = append(want, map[string]any{"name": tool.Name, "description": tool.Description})
	}
	if len(want) < 3 {
		t.Fatalf("the server lists %d tools, want the three run tools at least", len(want))
	}
	path := filepath.Join("mcpb", "manifest.json")
	m := readJSON(t, path)
	if *update {
		m["tools"] = want
		writeJSON(t, path, m)
	}
	got, _ := json.Marshal(m["tools"])
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		t.Errorf("%s tools:\n%s\nthe server's tools/list:\n%s\n(go test ./packaging -update)", path, got, exp)
	}
}

// TestBundleUserConfigIsFlags: every argument of the bundle's mcp_config is --flag=${user_config.x}
// for a flag of the binary and an option of user_config, and every option is used.
func TestBundleUserConfigIsFlags(t *testing.T) {
	m := readJSON(t, filepath.Join("mcpb", "manifest.json"))
	flags := map[string]binaryFlag{}
	for _, f := range binaryFlags(t) {
		flags[f.name] = f
	}
	options := m["user_config"].(map[string]any)
	used := map[string]bool{}
	arg := regexp.MustCompile(`^--([a-z0-9-]+)=\$\{user_config\.([a-z_]+)\}$`)
	for _, a := range m["server"].(map[string]any)["mcp_config"].(map[string]any)["args"].([]any) {
		p := arg.FindStringSubmatch(a.(string))
		if p == nil {
			t.Errorf("argument %q is not --flag=${user_config.option}", a)
			continue
		}
		f, ok := flags[p[1]]
		if !ok {
			t.Errorf("argument %q: the binary has no flag --%s", a, p[1])
		}
		opt, ok := options[p[2]].(map[string]any)
		if !ok {
			t.Errorf("argument %q: user_config has no option %s", a, p[2])
			continue
		}
		used[p[2]] = true
		if opt["default"] != f.def {
			t.Errorf("user_config.%s default %q, the flag's %q", p[2], opt["default"], f.def)
		}
	}
	for name := range options {
		if !used[name] {
			t.Errorf("user_config.%s is passed to no flag", name)
		}
	}
	for _, want := range []string{"isolation", "docker-image", "cline"} {
		if !slices.ContainsFunc(m["server"].(map[string]any)["mcp_config"].(map[string]any)["args"].([]any),
			func(a any) bool { return strings.HasPrefix(a.(string), "--"+want+"=") }) {
			t.Errorf("the bundle does not let the user set --%s", want)
		}
	}
}

// registrySchema is the server.json schema the MCP Registry publishes, as its Go module ships it
// (pinned in tools/go.mod; the schema's $id is its published URL).
func registrySchema(t *testing.T) (string, []byte) {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join("..", "tools", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	v := regexp.MustCompile(`github.com/modelcontextprotocol/registry (v\S+)`).FindSubmatch(gomod)
	if v == nil {
		t.Fatal("tools/go.mod does not pin github.com/modelcontextprotocol/registry")
	}
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/modelcontextprotocol/registry@"+string(v[1]))
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download the registry's module: %v\n%s", err, out)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	constants, err := os.ReadFile(filepath.Join(mod.Dir, "pkg", "model", "constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	cur := regexp.MustCompile(`CurrentSchemaVersion = "([0-9-]+)"`).FindSubmatch(constants)
	if cur == nil {
		t.Fatal("no CurrentSchemaVersion in the registry's pkg/model")
	}
	schema, err := os.ReadFile(filepath.Join(mod.Dir, "internal", "validators", "schemas", string(cur[1])+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return "https://static.modelcontextprotocol.io/schemas/" + string(cur[1]) + "/server.schema.json", schema
}

// TestServerJSONValidates: server.json validates against the MCP Registry's current published
// schema and names it.
func TestServerJSONValidates(t *testing.T) {
	url, schema := registrySchema(t)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "server.json")
	if p := os.Getenv("CLINE_MCP_SERVER_JSON"); p != "" { // make bundle: the release's dist/server.json
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s does not validate against %s:\n%v", path, url, err)
	}
	if got := inst.(map[string]any)["$schema"]; got != url {
		t.Errorf("server.json $schema %v, want the registry's current %s", got, url)
	}
	bad := bytes.Replace(b, []byte(`"type": "stdio"`), []byte(`"type": "pigeon"`), 1)
	if inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bad)); sch.Validate(inst) == nil {
		t.Error("a transport the schema does not know validates: the check proves nothing")
	}
}
