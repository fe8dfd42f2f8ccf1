package docker

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

func TestExitFromStatus(t *testing.T) {
	tests := []struct {
		code       int
		oom        bool
		wantSignal string
	}{
		{0, false, ""},
		{1, false, ""},
		{127, false, ""},
		{128, false, ""},
		{130, false, "SIGINT"},
		{137, false, "SIGKILL"},
		{143, false, "SIGTERM"},
		{139, false, "SIGSEGV"},
		{128 + 35, false, "SIGRTMIN+1"},
		{255, false, ""},
		{137, true, "SIGKILL"},
		{1, true, "SIGKILL"},
	}
	for _, tt := range tests {
		x := sandbox.ExitFromStatus(tt.code, tt.oom)
		if x.Code != tt.code || x.Signal != tt.wantSignal || x.OOMKilled != tt.oom {
			t.Errorf("ExitFromStatus(%d, %v): got %+v, want code %d signal %q", tt.code, tt.oom, x, tt.code, tt.wantSignal)
		}
	}
}

func TestParseUserNeverNegative(t *testing.T) {
	orig := callerIDs
	t.Cleanup(func() { callerIDs = orig })
	callerIDs = func() (int, int) { return -1, -1 } // what os.Getuid/Getgid return on Windows
	if u, err := parseUser(""); !errors.Is(err, errNoCallerIDs) {
		t.Errorf("parseUser(\"\") on a platform without uids: got %v %v, want errNoCallerIDs", u, err)
	}
	e := &Executor{image: "x", network: "none", instance: "i"}
	if _, err := e.createOptions(sandbox.Spec{Path: "/usr/local/bin/cline"}, "run", nil); !errors.Is(err, errNoCallerIDs) {
		t.Errorf("createOptions without a uid: got %v, want errNoCallerIDs (no -1 may reach the engine)", err)
	}
	if u, err := parseUser("1000:1000"); err != nil || u.String() != "1000:1000" {
		t.Errorf("an explicit user still works: got %v %v", u, err)
	}
}

func TestParseUser(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"12345:23456", "12345:23456", false},
		{"1000", "1000:1000", false},
		{"0:0", "0:0", false},
		{"node", "", true},
		{"1000:staff", "", true},
		{"-1:0", "", true},
	}
	for _, tt := range tests {
		u, err := parseUser(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && u.String() != tt.want) {
			t.Errorf("parseUser(%q): got %v %v, want %q (error %v)", tt.in, u, err, tt.want, tt.wantErr)
		}
	}
}

func TestTmpfsOptions(t *testing.T) {
	u := runUser{1000, 1001}
	tests := []struct {
		t    sandbox.Tmpfs
		want string
	}{
		{sandbox.Tmpfs{Target: "/tmp"}, "rw,exec,nosuid,nodev,size=256m,mode=1777"},
		{sandbox.Tmpfs{Target: "/var/tmp/", SizeMB: 10}, "rw,exec,nosuid,nodev,size=10m,mode=1777"},
		{sandbox.Tmpfs{Target: "/home/cline", SizeMB: 32}, "rw,exec,nosuid,nodev,size=32m,mode=0700,uid=1000,gid=1001"},
	}
	for _, tt := range tests {
		if got := tmpfsOptions(tt.t, u, false); got != tt.want {
			t.Errorf("tmpfsOptions(%+v): got %q, want %q", tt.t, got, tt.want)
		}
	}
}

func TestCheckMountSource(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	link := filepath.Join(dir, "link")
	if err := os.Symlink("/var/run", link); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	sockets := socketPaths("unix:///srv/engine/docker.sock")
	tests := []struct {
		src     string
		refused bool
	}{
		{"/var/run/docker.sock", true},
		{"/run/docker.sock", true},
		{"/var/run", true},
		{"/run/", true},
		{"/", true},
		{"/srv", true},           // contains the DOCKER_HOST socket
		{"/srv/engine/x", false}, // beside it
		{sock, true},             // any socket
		{link, true},             // a symlink to /var/run
		{repo, false},            // an ordinary checkout
		{"/runner", false},       // a prefix of /run by name only
		{dir, false},             // holds a socket but not a Docker one
	}
	for _, tt := range tests {
		err := checkMountSource(tt.src, sockets)
		if got := errors.Is(err, errDockerSocket); got != tt.refused {
			t.Errorf("checkMountSource(%q): got %v, want refused=%v", tt.src, err, tt.refused)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, opt := range []Option{WithImage(""), WithNetwork(""), WithMemory(1), WithPidsLimit(1), WithCPUs(0), WithInstanceID("")} {
		if _, err := New(WithClient(&fakeClient{}), opt); err == nil {
			t.Errorf("got no error for a bad option, want one")
		}
	}
}

// TestProviderAddrAgrees: the bridge points a keyless run's provider at sandbox.ProviderProxyAddr;
// the forwarder this executor starts listens on egress.ProviderAddr.
func TestProviderAddrAgrees(t *testing.T) {
	if egress.ProviderAddr != sandbox.ProviderProxyAddr {
		t.Errorf("egress.ProviderAddr %q != sandbox.ProviderProxyAddr %q", egress.ProviderAddr, sandbox.ProviderProxyAddr)
	}
}
