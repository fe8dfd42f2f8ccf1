package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// The answers in testdata/engines were recorded on Debian 12 from Docker 20.10 and Podman 4.3,
// each rootful (as root) and rootless (dockerd-rootless.sh and `podman system service` as a
// user), trimmed to the fields detection reads.
func loadAnswers(t *testing.T, name string) (client.ServerVersionResult, system.Info) {
	t.Helper()
	var v system.VersionResponse
	var info system.Info
	for p, dst := range map[string]any{name + ".version.json": &v, name + ".info.json": &info} {
		b, err := os.ReadFile(filepath.Join("testdata", "engines", p))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	return client.ServerVersionResult{Version: v.Version, Components: v.Components}, info
}

func TestDetectFlavour(t *testing.T) {
	tests := []struct {
		name             string
		podman, rootless bool
		product          string
	}{
		{"docker-rootful", false, false, "Docker Engine"},
		{"docker-rootless", false, true, "Docker Engine"},
		{"podman-rootful", true, false, "Podman Engine"},
		// Rootless Podman's security options do not say so: the Rootless field does (below).
		{"podman-rootless", true, false, "Podman Engine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := detectFlavour(loadAnswers(t, tt.name))
			if f.podman != tt.podman || f.rootless != tt.rootless || f.product != tt.product || f.version == "" {
				t.Errorf("got %+v, want podman %v rootless %v product %s", f, tt.podman, tt.rootless, tt.product)
			}
		})
	}
}

// TestPodmanRootlessFromInfo: the recorded raw /info answer of rootless Podman, served over a
// connection, is read as rootless; a rootful answer is not.
func TestPodmanRootlessFromInfo(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "engines", "podman-rootless.info.http"))
	if err != nil {
		t.Fatal(err)
	}
	rootful, err := os.ReadFile(filepath.Join("testdata", "engines", "podman-rootful.info.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		answer []byte
		want   bool
	}{
		"rootless": {raw, true},
		"rootful":  {append([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nLibpod-Api-Version: 4.3.1\r\n\r\n"), rootful...), false},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			e := newFakeExecutor(t, f)
			e.cli = dialingFake{f, servingOnce(t, tt.answer)}
			got, err := e.podmanRootless(t.Context())
			if err != nil || got != tt.want {
				t.Errorf("got %v %v, want %v", got, err, tt.want)
			}
		})
	}
}

// dialingFake adds the client's Dialer to the fake.
type dialingFake struct {
	*fakeClient
	dial func(context.Context) (net.Conn, error)
}

func (d dialingFake) Dialer() func(context.Context) (net.Conn, error) { return d.dial }

// servingOnce is a dialer whose connection answers one GET /info with answer.
func servingOnce(t *testing.T, answer []byte) func(context.Context) (net.Conn, error) {
	return func(context.Context) (net.Conn, error) {
		ours, theirs := net.Pipe()
		go func() {
			defer theirs.Close()
			req, err := http.ReadRequest(bufio.NewReader(theirs))
			if err != nil || req.URL.Path != "/info" {
				t.Errorf("got request %v %v, want GET /info", req, err)
				return
			}
			_, _ = theirs.Write(answer)
		}()
		return ours, nil
	}
}

func TestIdentityAndCreateOptionsPerEngine(t *testing.T) {
	caller := runUser{1000, 1000}
	tests := []struct {
		name       string
		f          flavour
		wantUser   string
		wantUserns string
		wantHome   string
	}{
		{"rootful docker", flavour{}, "1000:1000", "", "uid=1000,gid=1000"},
		{"rootless docker", flavour{rootless: true}, "0:0", "", "uid=0,gid=0"},
		{"rootful podman", flavour{podman: true}, "1000:1000", "", "mode=0700,U"},
		{"rootless podman", flavour{podman: true, rootless: true}, "1000:1000", "keep-id", "mode=0700,U"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeExecutor(t, newFake())
			plan := runPlan{id: identityFor(tt.f, caller)}
			opts, err := e.createOptions(sandbox.Spec{Path: "/usr/local/bin/cline", Tmpfs: []sandbox.Tmpfs{{Target: "/home/cline"}}}, "run", &plan)
			if err != nil {
				t.Fatal(err)
			}
			if opts.Config.User != tt.wantUser || string(opts.HostConfig.UsernsMode) != tt.wantUserns {
				t.Errorf("got user %s userns %q, want %s %q", opts.Config.User, opts.HostConfig.UsernsMode, tt.wantUser, tt.wantUserns)
			}
			if home := opts.HostConfig.Tmpfs["/home/cline"]; !strings.Contains(home, tt.wantHome) {
				t.Errorf("got HOME tmpfs %q, want it owned by %s", home, tt.wantHome)
			}
		})
	}
}

// TestFlavourAskedOnce: the engine is asked what it is once per executor, and Run uses the
// answer: a rootless Docker engine runs the container as uid 0.
func TestFlavourAskedOnce(t *testing.T) {
	f := newFake()
	e := newFakeExecutor(t, f)
	e.cli = rootlessFake{f}
	for range 2 {
		if got := e.flavour(t.Context()); !got.rootless {
			t.Fatalf("got %+v, want rootless", got)
		}
	}
	if _, err := e.Run(t.Context(), sandbox.Spec{Path: "/bin/x"}); err != nil {
		t.Fatal(err)
	}
	if f.created.Config.User != "0:0" {
		t.Errorf("got user %s on rootless Docker, want 0:0", f.created.Config.User)
	}
}

// rootlessFake answers like rootless Docker, and panics when asked twice.
type rootlessFake struct{ *fakeClient }

func (r rootlessFake) Info(ctx context.Context, o client.InfoOptions) (client.SystemInfoResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if c == "info" {
			panic("info asked twice")
		}
	}
	r.calls = append(r.calls, "info")
	return client.SystemInfoResult{Info: system.Info{SecurityOptions: []string{"name=seccomp,profile=default", "name=rootless"}}}, nil
}
