// Package engine finds the container engine the way the docker CLI does and connects to it:
// --docker-host, DOCKER_HOST (with its TLS variables), Docker contexts under DOCKER_CONFIG, and
// the fallback sockets of rootless Docker, Docker Desktop and Podman (Discover); plain, TLS or
// ssh:// (`ssh … docker system dial-stdio`) connections (NewClient); and what the engine is —
// Docker or Podman, rootful or rootless (Detect). Discover never reads the environment itself:
// the caller fills a Lookup. sandbox/docker runs containers on what this package finds;
// cmd/cline-mcp reports it in doctor.
package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/client"
)

// Endpoint is the engine to talk to, and why it was chosen.
type Endpoint struct {
	// Host is the engine's address: unix:///path, tcp://host:port, ssh://[user@]host[:port][/socket]
	// or npipe:////./pipe/name.
	Host string
	// TLS is how to speak TLS to a tcp:// Host; nil means plain.
	TLS *TLSFiles
	// Source says where Host came from ("--docker-host", "DOCKER_HOST", "DOCKER_CONTEXT=colima",
	// "current context colima of ~/.docker/config.json", "default socket", …), for doctor and logs.
	Source string
	// Context is the Docker context's name when Host came from one.
	Context string
}

// TLSFiles are the TLS settings of an Endpoint: PEM files (each may be empty) and whether the
// server's certificate is verified (against CA when given, else the system roots).
type TLSFiles struct {
	CA, Cert, Key string
	Verify        bool
}

// Lookup is what Discover reads. cmd/cline-mcp fills it from the flags and the environment;
// this package never reads the environment itself.
type Lookup struct {
	// Flag is --docker-host; it wins over everything else.
	Flag string
	// Getenv reads DOCKER_HOST, DOCKER_CONTEXT, DOCKER_CONFIG, DOCKER_TLS_VERIFY, DOCKER_TLS,
	// DOCKER_CERT_PATH and XDG_RUNTIME_DIR.
	Getenv func(string) string
	// Home is the user's home directory (~/.docker, Docker Desktop's socket).
	Home string
	// IsSocket reports whether a unix socket exists at path; nil means a stat of the file.
	IsSocket func(path string) bool
}

// DefaultHost is the platform's default engine address (a unix socket, a named pipe on Windows).
const DefaultHost = client.DefaultDockerHost

// Default is the endpoint of the default socket, used when nothing was discovered.
func Default() Endpoint { return Endpoint{Host: DefaultHost, Source: "default socket"} }

// defaultContext is the name the docker CLI gives the engine of DOCKER_HOST or the default socket.
const defaultContext = "default"

// Discover picks the engine the way the docker CLI does, so the server finds the engine wherever
// `docker` finds it:
//
//  1. --docker-host (Lookup.Flag), else DOCKER_HOST, with TLS from DOCKER_TLS_VERIFY /
//     DOCKER_TLS and the PEM files in DOCKER_CERT_PATH (default: the Docker config dir);
//  2. else the context named by DOCKER_CONTEXT, else the currentContext of config.json in
//     DOCKER_CONFIG (default ~/.docker): its host and TLS material from the context store
//     (contexts/meta/<sha256 of the name>/meta.json, contexts/tls/<sha256>/docker/*.pem);
//  3. else the default socket, and when that does not exist the first socket that does of:
//     rootless Docker ($XDG_RUNTIME_DIR/docker.sock), Docker Desktop (~/.docker/run/docker.sock),
//     rootless Podman ($XDG_RUNTIME_DIR/podman/podman.sock), Podman (/run/podman/podman.sock).
//
// A named context that does not exist, or a context store that cannot be read, is an error, as
// it is for the docker CLI; an unreadable config.json is ignored, as the CLI does (with a warning
// in Source). The context named "default" is step 3.
func Discover(l Lookup) (Endpoint, error) {
	getenv := l.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfgDir := configDir(getenv, l.Home)
	if l.Flag != "" {
		return Endpoint{Host: l.Flag, TLS: tlsFromEnv(getenv, cfgDir), Source: "--docker-host"}, nil
	}
	if h := getenv("DOCKER_HOST"); h != "" {
		return Endpoint{Host: h, TLS: tlsFromEnv(getenv, cfgDir), Source: "DOCKER_HOST"}, nil
	}
	name, source, warn := getenv("DOCKER_CONTEXT"), "DOCKER_CONTEXT=", ""
	if name != "" {
		source += name
	} else {
		var err error
		name, err = currentContext(cfgDir)
		if err != nil {
			warn = fmt.Sprintf(" (ignoring %s: %v)", filepath.Join(cfgDir, "config.json"), err)
		}
		source = fmt.Sprintf("current context %s of %s", name, filepath.Join(cfgDir, "config.json"))
	}
	if name != "" && name != defaultContext {
		ep, err := readContext(cfgDir, name)
		if err != nil {
			return Endpoint{}, fmt.Errorf("docker context %s (%s): %w", name, source, err)
		}
		ep.Source = source
		return ep, nil
	}
	ep := defaultEndpoint(getenv, l)
	if name == defaultContext {
		ep.Source += ", " + source
	}
	ep.Source += warn
	return ep, nil
}

// configDir is the docker CLI's config dir: DOCKER_CONFIG, else ~/.docker.
func configDir(getenv func(string) string, home string) string {
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	return filepath.Join(home, ".docker")
}

// currentContext reads currentContext from config.json; a missing file means none.
func currentContext(cfgDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(cfgDir, "config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", err
	}
	return cfg.CurrentContext, nil
}

// contextMeta is the part of a context's meta.json the engine connection needs.
type contextMeta struct {
	Name      string `json:"Name"`
	Endpoints map[string]struct {
		Host          string `json:"Host"`
		SkipTLSVerify bool   `json:"SkipTLSVerify"`
	} `json:"Endpoints"`
}

// contextID is the directory name of a context in the store: the hex SHA-256 of its name.
func contextID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// readContext reads one context from the store under cfgDir. TLS is on when the context has TLS
// material or says SkipTLSVerify, as in the docker CLI.
func readContext(cfgDir, name string) (Endpoint, error) {
	id := contextID(name)
	metaPath := filepath.Join(cfgDir, "contexts", "meta", id, "meta.json")
	b, err := os.ReadFile(metaPath)
	if errors.Is(err, fs.ErrNotExist) {
		return Endpoint{}, fmt.Errorf("context %q does not exist (no %s)", name, metaPath)
	}
	if err != nil {
		return Endpoint{}, err
	}
	var meta contextMeta
	if err := json.Unmarshal(b, &meta); err != nil {
		return Endpoint{}, fmt.Errorf("%s: %w", metaPath, err)
	}
	if meta.Name != name {
		return Endpoint{}, fmt.Errorf("%s belongs to context %q, not %q", metaPath, meta.Name, name)
	}
	d, ok := meta.Endpoints["docker"]
	if !ok || d.Host == "" {
		return Endpoint{}, fmt.Errorf("context %q has no docker endpoint (%s)", name, metaPath)
	}
	ep := Endpoint{Host: d.Host, Context: name}
	tlsDir := filepath.Join(cfgDir, "contexts", "tls", id, "docker")
	files := TLSFiles{
		CA:     existing(filepath.Join(tlsDir, "ca.pem")),
		Cert:   existing(filepath.Join(tlsDir, "cert.pem")),
		Key:    existing(filepath.Join(tlsDir, "key.pem")),
		Verify: !d.SkipTLSVerify,
	}
	if files.CA != "" || files.Cert != "" || files.Key != "" || d.SkipTLSVerify {
		ep.TLS = &files
	}
	return ep, nil
}

// tlsFromEnv is the docker CLI's TLS for DOCKER_HOST and -H: on with DOCKER_TLS_VERIFY (which
// also verifies) or DOCKER_TLS, PEM files from DOCKER_CERT_PATH (default: the config dir) when
// they exist.
func tlsFromEnv(getenv func(string) string, cfgDir string) *TLSFiles {
	verify := getenv("DOCKER_TLS_VERIFY") != ""
	if !verify && getenv("DOCKER_TLS") == "" {
		return nil
	}
	dir := getenv("DOCKER_CERT_PATH")
	if dir == "" {
		dir = cfgDir
	}
	return &TLSFiles{
		CA:     existing(filepath.Join(dir, "ca.pem")),
		Cert:   existing(filepath.Join(dir, "cert.pem")),
		Key:    existing(filepath.Join(dir, "key.pem")),
		Verify: verify,
	}
}

func existing(p string) string {
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// defaultEndpoint is the platform's default socket, or the first fallback socket that exists
// when the default does not.
func defaultEndpoint(getenv func(string) string, l Lookup) Endpoint {
	isSocket := l.IsSocket
	if isSocket == nil {
		isSocket = socketExists
	}
	def := Endpoint{Host: DefaultHost, Source: "default socket"}
	path, ok := strings.CutPrefix(DefaultHost, "unix://")
	if !ok || isSocket(path) {
		return def
	}
	var cands []Endpoint
	if x := getenv("XDG_RUNTIME_DIR"); x != "" {
		cands = append(cands, Endpoint{Host: "unix://" + filepath.Join(x, "docker.sock"), Source: "rootless Docker socket ($XDG_RUNTIME_DIR/docker.sock; the default socket does not exist)"})
	}
	if l.Home != "" {
		cands = append(cands, Endpoint{Host: "unix://" + filepath.Join(l.Home, ".docker", "run", "docker.sock"), Source: "Docker Desktop socket (~/.docker/run/docker.sock; the default socket does not exist)"})
	}
	if x := getenv("XDG_RUNTIME_DIR"); x != "" {
		cands = append(cands, Endpoint{Host: "unix://" + filepath.Join(x, "podman", "podman.sock"), Source: "rootless Podman socket ($XDG_RUNTIME_DIR/podman/podman.sock; the default socket does not exist)"})
	}
	cands = append(cands, Endpoint{Host: "unix:///run/podman/podman.sock", Source: "Podman socket (/run/podman/podman.sock; the default socket does not exist)"})
	for _, c := range cands {
		if isSocket(strings.TrimPrefix(c.Host, "unix://")) {
			return c
		}
	}
	def.Source = "default socket (no engine socket found: not the default, nor rootless Docker, Docker Desktop or Podman)"
	return def
}

func socketExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&fs.ModeSocket != 0
}
