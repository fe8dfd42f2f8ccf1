// Command mcpb stages one MCP Bundle (.mcpb, Claude Desktop) directory per platform for the
// official `mcpb pack`: the manifest (manifest.json beside this file, with the version, the entry
// point and the platform filled in), the server built for that platform, the README and the
// licence files. `make bundle` runs it, then validates and packs each directory with mcpb.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// platforms maps GOOS to the manifest's compatibility.platforms name.
var platforms = map[string]string{"darwin": "darwin", "windows": "win32", "linux": "linux"}

func main() {
	version := flag.String("version", "dev", "version of the bundles (v1.2.3, or anything else for 0.0.0-<it>)")
	out := flag.String("out", "dist/bundle", "directory for one staging directory per target")
	targets := flag.String("targets", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64", "GOOS/GOARCH list")
	serverJSON := flag.String("server-json", "", "instead: write server.json for this version to this file, with the identifiers and SHA-256 of the packed bundles in the directory of -out's parent")
	flag.Parse()
	if *serverJSON != "" {
		if err := releaseServerJSON(*serverJSON, filepath.Dir(*out), *version); err != nil {
			fail(err)
		}
		return
	}
	tmpl, err := os.ReadFile(filepath.Join("packaging", "mcpb", "manifest.json"))
	if err != nil {
		fail(err)
	}
	for _, t := range strings.Split(*targets, ",") {
		goos, goarch, _ := strings.Cut(t, "/")
		dir := filepath.Join(*out, goos+"_"+goarch)
		if err := stage(tmpl, dir, goos, goarch, *version); err != nil {
			fail(fmt.Errorf("%s: %w", t, err))
		}
		fmt.Println(dir)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mcpb:", err)
	os.Exit(1)
}

var semver = regexp.MustCompile(`^v?(\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?)$`)

// bundleVersion is version as the semantic version a manifest carries.
func bundleVersion(version string) string {
	if m := semver.FindStringSubmatch(version); m != nil {
		return m[1]
	}
	return "0.0.0-" + regexp.MustCompile(`[^0-9A-Za-z-]+`).ReplaceAllString(version, "-")
}

// stage writes dir: manifest.json, server/cline-mcp[.exe], README.md and LICENSE* files.
func stage(tmpl []byte, dir, goos, goarch, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	exe := "server/cline-mcp"
	if goos == "windows" {
		exe += ".exe"
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -buildid= -X main.version="+version,
		"-o", filepath.Join(dir, filepath.FromSlash(exe)), "./cmd/cline-mcp")
	build.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(tmpl, &m); err != nil {
		return err
	}
	m["version"] = bundleVersion(version)
	server := m["server"].(map[string]any)
	server["entry_point"] = exe
	server["mcp_config"].(map[string]any)["command"] = "${__dirname}/" + exe
	m["compatibility"].(map[string]any)["platforms"] = []string{platforms[goos]}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	docs, _ := filepath.Glob("LICENSE*")
	for _, f := range append(docs, "README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// releaseServerJSON writes server.json (the repository's) for version to out: the version, and for
// each bundle package the release download URL and the SHA-256 of dist/<its file name>.
func releaseServerJSON(out, dist, version string) error {
	b, err := os.ReadFile("server.json")
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	v := bundleVersion(version)
	doc["version"] = v
	for _, p := range doc["packages"].([]any) {
		p := p.(map[string]any)
		id := p["identifier"].(string)
		file := id[strings.LastIndex(id, "/")+1:]
		data, err := os.ReadFile(filepath.Join(dist, file))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		p["fileSha256"] = hex.EncodeToString(sum[:])
		p["version"] = v
		p["identifier"] = "https://github.com/cline-mcp/cline-mcp/releases/download/v" + v + "/" + file
	}
	b, err = json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}
