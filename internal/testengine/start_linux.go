package testengine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stateBase is where engine state lives: outside every temp dir the tests use (which the
// second dockerd must not see), and short enough for the unix sockets inside it.
const stateBase = "/var/tmp"

// Check says why private engines cannot run here (nil when they can): root, unshare and the
// engine binary on PATH, and a temp dir that is not under stateBase.
func Check(binary string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: running as uid %d", ErrUnsupported, os.Geteuid())
	}
	for _, b := range []string{binary, "unshare", "docker"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s is not installed: %w", b, err)
		}
	}
	if tmp, _ := filepath.EvalSymlinks(os.TempDir()); strings.HasPrefix(tmp+"/", stateBase+"/") {
		return fmt.Errorf("TMPDIR %s lies under %s, which the private dockerd must see", tmp, stateBase)
	}
	return nil
}

// StartDockerd starts a second dockerd in its own mount and network namespaces; the mount
// namespace has a private tmpfs on /tmp and on TMPDIR, so it cannot see the files of the tests.
// It answers on unix://<Dir>/sock; its containers can only use --network none.
func StartDockerd(ctx context.Context) (*Engine, error) {
	dir, err := newState("dockerd", "cme-", "daemon.json", "{}\n")
	if err != nil {
		return nil, err
	}
	hides := []string{"/tmp"}
	if tmp, err := filepath.EvalSymlinks(os.TempDir()); err == nil && tmp != "/tmp" && !strings.HasPrefix(tmp, "/tmp/") {
		hides = append(hides, tmp)
	}
	var script strings.Builder
	for _, h := range hides {
		fmt.Fprintf(&script, "mount -t tmpfs -o mode=1777,size=512m tmpfs %q && ", h)
	}
	fmt.Fprintf(&script, "exec dockerd --config-file %[1]s/daemon.json --data-root %[1]s/data --exec-root %[1]s/exec --pidfile %[1]s/pid -H unix://%[1]s/sock --bridge=none --iptables=false --ip6tables=false --ip-masq=false", dir)
	e := &Engine{Name: "dockerd", Host: "unix://" + filepath.Join(dir, "sock"), Dir: dir}
	// Its own network namespace too: a dockerd started with --bridge=none deletes the docker0
	// bridge of its network namespace, which must never be the host's (the default engine's).
	cmd := exec.Command("unshare", "--mount", "--net", "--propagation", "private", "--", "sh", "-c", script.String())
	return e, e.start(ctx, cmd)
}

// StartPodman starts `podman system service` with its own storage under Dir, in private mount
// and network namespaces (it sees the host's files; its storage mounts and any network set-up
// stay its own), answering the Docker-compatible API on unix://<Dir>/sock. Its containers.conf sets the default ulimits to
// this process's own: Podman otherwise raises them for root, which a machine without
// CAP_SYS_RESOURCE (a container or a sandbox VM) refuses.
func StartPodman(ctx context.Context) (*Engine, error) {
	var nofile syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile)
	conf := fmt.Sprintf("[containers]\ndefault_ulimits = [\"nofile=%d:%d\", \"nproc=4096:4096\"]\n", nofile.Cur, nofile.Max)
	dir, err := newState("podman", "cmp-", "containers.conf", conf)
	if err != nil {
		return nil, err
	}
	e := &Engine{Name: "podman", Host: "unix://" + filepath.Join(dir, "sock"), Dir: dir}
	// Its own mount namespace: the storage mounts Podman makes go away with it.
	cmd := exec.Command("unshare", "--mount", "--net", "--propagation", "private", "--",
		"podman", "--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
		"--tmpdir", filepath.Join(dir, "tmp"), "system", "service", "--time=0", e.Host)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(dir, "containers.conf"))
	return e, e.start(ctx, cmd)
}

// newState checks the prerequisites of binary, removes stale engine state and makes a fresh
// state directory holding the engine's config file.
func newState(binary, prefix, config, content string) (string, error) {
	if err := Check(binary); err != nil {
		return "", err
	}
	sweepStale()
	dir, err := os.MkdirTemp(stateBase, prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, config), []byte(content), 0o644); err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	return dir, nil
}

// start runs cmd as the leader of its own process group with its output in Dir/log, and waits
// until the engine answers. On failure the engine is stopped again.
func (e *Engine) start(ctx context.Context, cmd *exec.Cmd) error {
	e.log = filepath.Join(e.Dir, "log")
	logf, err := os.Create(e.log)
	if err != nil {
		return errors.Join(err, os.RemoveAll(e.Dir))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: a test binary that dies (a panic skips every cleanup) takes its engine along;
	// the engine then stops its containerd itself. sweepStale removes the state left behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	e.ifaces = interfaceNames()
	if err := startOnLockedThread(cmd); err != nil {
		logf.Close()
		return errors.Join(fmt.Errorf("start %s: %w", e.Name, err), os.RemoveAll(e.Dir))
	}
	e.cmd, e.done = cmd, make(chan struct{})
	_ = os.WriteFile(filepath.Join(e.Dir, "engine.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(e.done)
	}()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := e.waitReady(rctx); err != nil {
		return errors.Join(err, e.Stop())
	}
	return nil
}

// Stop ends the engine: SIGTERM (it stops its own containerd), then SIGKILL to its process
// group after 30 s, and removes its state directory. It is safe to call twice.
func (e *Engine) Stop() error {
	if e.cmd == nil {
		return os.RemoveAll(e.Dir)
	}
	pgid := e.cmd.Process.Pid
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-e.done
	}
	// Whatever the engine started in its group (containerd, conmon) goes with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	e.cmd = nil
	return errors.Join(e.hostUntouched(), removeState(e.Dir))
}

// removeState removes an engine's state directory. An engine killed in the middle of its own
// teardown (Podman's storage under load) can leave overlay and shm mounts inside it, and a
// process of its group may still be exiting: those mounts are detached, deepest first, and the
// removal is retried for a few seconds before it counts as failed.
func removeState(dir string) error {
	var err error
	for i := 0; i < 20; i++ {
		detachMountsUnder(dir)
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}

// detachMountsUnder lazily unmounts every mount point below dir in this mount namespace.
func detachMountsUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	// deepest first: a mount inside another must go before it
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// sweepStale removes the state directories of private engines whose process is gone (their
// test binary died before Stop). Directories without a recorded pid are younger than a start
// and left alone.
func sweepStale() {
	for _, pattern := range []string{"cme-*", "cmp-*"} {
		dirs, _ := filepath.Glob(filepath.Join(stateBase, pattern))
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, "engine.pid"))
			if err != nil {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 1 {
				continue
			}
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				_ = os.RemoveAll(d)
			}
		}
	}
}

// starts runs process starts on one OS thread that lives as long as the test binary: Pdeathsig
// fires when the thread that started the child ends, and Go ends a thread whenever a goroutine
// locked to it exits (internal/netns does that on purpose), which must not stop an engine.
var starts = make(chan func())

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked, never returns
		for f := range starts {
			f()
		}
	}()
}

func startOnLockedThread(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	starts <- func() { done <- cmd.Start() }
	return <-done
}
