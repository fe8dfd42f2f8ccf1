package packaging

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
)

// serverEnv are the environment variables the server reads that a user sets, documented in
// server.json: name → description.
var serverEnv = []map[string]any{
	{"name": "CLINE_MCP_CLINE", "description": "Path of the Cline executable when --cline is not given (else cline on PATH)."},
	{"name": "CLINE_PROVIDER_SETTINGS_PATH", "description": "Cline's provider settings file (providers.json), as the Cline CLI reads it."},
	{"name": "CLINE_DATA_DIR", "description": "Cline's data directory, as the Cline CLI reads it (default ~/.cline/data)."},
	{"name": "DOCKER_HOST", "description": "Docker engine address for isolation docker, when --docker-host is not given."},
}

// pathFlags take a file or directory path.
var pathFlags = []string{"cline", "log-file", "worktree-root"}

// argumentsOf are the binary's flags as the registry's named arguments.
func argumentsOf(flags []binaryFlag) []any {
	var args []any
	for _, f := range flags {
		a := map[string]any{"type": "named", "name": "--" + f.name, "description": f.usage, "format": "string"}
		switch {
		case slices.Contains(pathFlags, f.name):
			a["format"] = "filepath"
		case f.kind == "int" || f.kind == "float":
			a["format"] = "number"
		case f.kind == "value":
			a["isRepeated"] = true
		}
		if f.def != "" && f.kind != "value" {
			a["default"] = f.def
		}
		args = append(args, a)
	}
	return args
}

// TestServerJSONArgumentsAreFlags: every package in server.json documents exactly the binary's
// flags (name, description, default, repeatability) and the environment it reads; go test
// ./packaging -update rewrites them from the built binary.
func TestServerJSONArgumentsAreFlags(t *testing.T) {
	path := filepath.Join("..", "server.json")
	doc := readJSON(t, path)
	want := argumentsOf(binaryFlags(t))
	wantEnv := make([]any, len(serverEnv))
	for i, e := range serverEnv {
		wantEnv[i] = e
	}
	packages, _ := doc["packages"].([]any)
	if len(packages) < 6 {
		t.Fatalf("server.json has %d packages, want a bundle per platform", len(packages))
	}
	for _, p := range packages {
		p := p.(map[string]any)
		if *update {
			p["packageArguments"], p["environmentVariables"] = want, wantEnv
		}
		if !sameJSON(p["packageArguments"], want) {
			t.Errorf("%v: packageArguments are not the binary's flags (go test ./packaging -args -update)", p["identifier"])
		}
		if !sameJSON(p["environmentVariables"], wantEnv) {
			t.Errorf("%v: environmentVariables differ from serverEnv", p["identifier"])
		}
		if tr, _ := p["transport"].(map[string]any); tr["type"] != "stdio" {
			t.Errorf("%v: transport %v, want stdio", p["identifier"], tr)
		}
	}
	if *update {
		writeJSON(t, path, doc)
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
