package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
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
			f := KindOf(loadAnswers(t, tt.name))
			if f.Podman != tt.podman || f.Rootless != tt.rootless || f.Product != tt.product || f.Version == "" {
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
			got, err := podmanRootless(t.Context(), dialingFake{servingOnce(t, tt.answer)})
			if err != nil || got != tt.want {
				t.Errorf("got %v %v, want %v", got, err, tt.want)
			}
		})
	}
	if got, err := podmanRootless(t.Context(), struct{}{}); got || err != nil {
		t.Errorf("a client without a dialer: got %v %v, want false", got, err)
	}
}

// TestDetectPodmanRootless: Detect asks the version and info, and for a Podman engine whose
// security options are silent, reads the raw /info answer over the client's dialer.
func TestDetectPodmanRootless(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "engines", "podman-rootless.info.http"))
	if err != nil {
		t.Fatal(err)
	}
	v, info := loadAnswers(t, "podman-rootless")
	k, err := Detect(t.Context(), answering{v, info, dialingFake{servingOnce(t, raw)}})
	if err != nil || !k.Podman || !k.Rootless {
		t.Errorf("got %+v %v, want rootless Podman", k, err)
	}
}

// answering is an Asker with recorded answers and a dialer.
type answering struct {
	v    client.ServerVersionResult
	info system.Info
	dialingFake
}

func (a answering) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return a.v, nil
}

func (a answering) Info(context.Context, client.InfoOptions) (client.SystemInfoResult, error) {
	return client.SystemInfoResult{Info: a.info}, nil
}

// dialingFake has only the client's Dialer.
type dialingFake struct {
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
