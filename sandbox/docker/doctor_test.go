package docker

import (
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

func TestDescribeEngine(t *testing.T) {
	d := Engine{
		Endpoint: engine.Endpoint{Host: "tcp://docker:2376", Source: "DOCKER_HOST", TLS: &engine.TLSFiles{}},
		Product:  "Docker Engine", Version: "27.3.1", Rootless: true,
		User:   "0:0 (rootless Docker: uid 0 in the container is the calling user on the host)",
		Mounts: MountsCopy, MountsWhy: "the engine does not see this machine's files",
	}
	want := "tcp://docker:2376 (from DOCKER_HOST), TLS without verification; Docker Engine 27.3.1, rootless; runs Cline as 0:0 (rootless Docker: uid 0 in the container is the calling user on the host); mounts: copy — the engine does not see this machine's files"
	if got := DescribeEngine(d); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
