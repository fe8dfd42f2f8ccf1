// Package testengine starts private container engines for the e2e tests, so copy mode and
// Podman are tested against real engines on one machine:
//
//   - a second dockerd in private mount and network namespaces with its own /tmp (a tmpfs), data
//     root, exec root, pidfile, daemon config and unix socket, without a bridge or iptables: the
//     temp dirs of the host (where tests keep their checkouts) do not exist for it, exactly like
//     for a dind service on CI or a remote engine;
//   - a Podman API service (`podman system service`) with its own storage, on a unix socket.
//
// Neither may touch the host's engine: Stop fails when a network interface of the host that
// existed at the start is gone (a dockerd sharing the host's network namespace with
// --bridge=none deletes the default engine's docker0).
//
// Both need Linux and root. Every engine is owned by the test process that started it: Stop
// ends it (SIGTERM, then SIGKILL of its process group) and removes its state directory.
package testengine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// ErrUnsupported: the private engines need Linux, root and the engine's binaries.
var ErrUnsupported = errors.New("private test engines need Linux and root")

// Engine is one private engine started by this process.
type Engine struct {
	// Name is "dockerd" or "podman".
	Name string
	// Host is its address for DOCKER_HOST and docker -H: unix:///…/sock.
	Host string
	// Dir is its state directory (data, sockets, logs), removed by Stop.
	Dir string

	cmd  *exec.Cmd
	done chan struct{}
	log  string
	// ifaces are the host's network interfaces when the engine started.
	ifaces []string
}

// interfaceNames are the host's lasting network interfaces that a misconfigured private engine
// could take down: the loopback, the physical ones and the default engine's docker0. Bridges of
// user-defined networks (br-*) and veth pairs come and go with other tests' containers and
// networks, so they are not watched.
func interfaceNames() []string {
	list, _ := net.Interfaces()
	names := make([]string, 0, len(list))
	for _, i := range list {
		if !strings.HasPrefix(i.Name, "veth") && !strings.HasPrefix(i.Name, "br-") {
			names = append(names, i.Name)
		}
	}
	return names
}

// hostUntouched says which host interfaces present at the start are gone.
func (e *Engine) hostUntouched() error {
	now := interfaceNames()
	var gone []string
	for _, n := range e.ifaces {
		if !slices.Contains(now, n) {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		return fmt.Errorf("%s: the host's network interfaces %v disappeared while it ran", e.Name, gone)
	}
	return nil
}

// Docker runs the docker CLI against the engine and returns its combined output.
func (e *Engine) Docker(ctx context.Context, args ...string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "docker", append([]string{"-H", e.Host}, args...)...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("docker -H %s %s: %w\n%s", e.Host, strings.Join(args, " "), err, out)
	}
	return out, nil
}

// LoadImage copies an image of the default engine into this one (docker save | docker load).
func (e *Engine) LoadImage(ctx context.Context, ref string) error {
	save := exec.CommandContext(ctx, "docker", "save", ref)
	load := exec.CommandContext(ctx, "docker", "-H", e.Host, "load", "-q")
	pipe, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	load.Stdin = pipe
	var saveErr, loadOut bytes.Buffer
	save.Stderr = &saveErr
	load.Stdout, load.Stderr = &loadOut, &loadOut
	if err := save.Start(); err != nil {
		return err
	}
	lerr := load.Run()
	serr := save.Wait()
	if serr != nil || lerr != nil {
		return fmt.Errorf("load %s into %s: save: %v %s; load: %v %s", ref, e.Name, serr, saveErr.String(), lerr, loadOut.String())
	}
	return nil
}

// Leftovers lists the containers (any state) and volumes of the engine that carry label.
func (e *Engine) Leftovers(ctx context.Context, label string) ([]string, error) {
	ps, err := e.Docker(ctx, "ps", "-aq", "--filter", "label="+label)
	if err != nil {
		return nil, err
	}
	vs, err := e.Docker(ctx, "volume", "ls", "-q", "--filter", "label="+label)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range strings.Fields(string(ps)) {
		out = append(out, "container "+id)
	}
	for _, v := range strings.Fields(string(vs)) {
		out = append(out, "volume "+v)
	}
	return out, nil
}

// Log is the engine's own output so far (for a failing test).
func (e *Engine) Log() string {
	b, _ := os.ReadFile(e.log)
	return string(b)
}

// waitReady polls the engine's socket until it answers, the process ends or ctx ends. An
// engine offers no readiness signal but its socket, hence the polling.
func (e *Engine) waitReady(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := exec.CommandContext(cctx, "docker", "-H", e.Host, "version").Run()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-e.done:
			return fmt.Errorf("%s exited before it answered:\n%s", e.Name, tail(e.Log(), 3000))
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer on %s: %w\n%s", e.Name, e.Host, ctx.Err(), tail(e.Log(), 3000))
		case <-tick.C:
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
