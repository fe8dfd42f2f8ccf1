package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// errDockerSocket is returned (inside a *sandbox.LaunchError) for a Spec that would mount the
// engine's socket, which is root on the host for whoever holds it.
var errDockerSocket = errors.New("refusing to mount the Docker socket or a directory containing it")

// runUser is the numeric identity of the container process.
type runUser struct{ uid, gid int }

func (u runUser) String() string { return strconv.Itoa(u.uid) + ":" + strconv.Itoa(u.gid) }

// callerIDs is the server's own uid and gid; both are -1 on Windows. A variable so tests can
// play a platform without them.
var callerIDs = func() (int, int) { return os.Getuid(), os.Getgid() }

// errNoCallerIDs: the platform has no numeric identity to give the container, and -1 must never
// reach the engine (it would run the CLI as an arbitrary or invalid user).
var errNoCallerIDs = errors.New("this platform has no numeric uid:gid for the container process (Windows); Docker isolation needs a Linux or macOS host, or WSL2")

// parseUser accepts "uid:gid" or "uid" (gid = uid), numeric only: a scratch image has no
// /etc/passwd to resolve names. Empty means the caller's own uid:gid.
func parseUser(s string) (runUser, error) {
	if s == "" {
		uid, gid := callerIDs()
		if uid < 0 || gid < 0 {
			return runUser{}, errNoCallerIDs
		}
		return runUser{uid, gid}, nil
	}
	us, gs, found := strings.Cut(s, ":")
	if !found {
		gs = us
	}
	uid, err := strconv.Atoi(us)
	if err != nil || uid < 0 {
		return runUser{}, fmt.Errorf("user %q: want numeric uid:gid", s)
	}
	gid, err := strconv.Atoi(gs)
	if err != nil || gid < 0 {
		return runUser{}, fmt.Errorf("user %q: want numeric uid:gid", s)
	}
	return runUser{uid, gid}, nil
}

// tmpfsOptions is the mount option string of one tmpfs. /tmp and /var/tmp are world-writable
// with the sticky bit like on any host; every other tmpfs (HOME) belongs to the run's user with
// mode 0700 — uid=/gid= on Docker, Podman's "U" (owned by the container's user), since Podman
// refuses uid= and gid=. exec stays allowed: Cline's runtime may unpack native modules into its
// temp dir, and the bind-mounted checkout is executable anyway.
func tmpfsOptions(t sandbox.Tmpfs, u runUser, podman bool) string {
	size := t.SizeMB
	if size <= 0 {
		size = DefaultTmpfsMB
	}
	opts := []string{"rw", "exec", "nosuid", "nodev", "size=" + strconv.Itoa(size) + "m"}
	switch path.Clean(t.Target) {
	case "/tmp", "/var/tmp":
		opts = append(opts, "mode=1777")
	default:
		opts = append(opts, "mode=0700")
		if podman {
			opts = append(opts, "U")
		} else {
			opts = append(opts, "uid="+strconv.Itoa(u.uid), "gid="+strconv.Itoa(u.gid))
		}
	}
	return strings.Join(opts, ",")
}

// socketPaths lists the places a Docker engine socket may live on this machine, resolved through
// symlinks where they exist (/var/run is usually a link to /run).
func socketPaths(daemonHost string) []string {
	cands := []string{"/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock"}
	if u, err := url.Parse(daemonHost); err == nil && u.Scheme == "unix" && u.Path != "" {
		cands = append(cands, u.Path)
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		cands = append(cands, filepath.Join(d, "docker.sock"), filepath.Join(d, "podman", "podman.sock"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		cands = append(cands, filepath.Join(h, ".docker", "run", "docker.sock"))
	}
	var out []string
	for _, c := range cands {
		c = filepath.Clean(c)
		out = append(out, c)
		if r, err := filepath.EvalSymlinks(c); err == nil && r != c {
			out = append(out, r)
		}
	}
	return out
}

// checkMountSource refuses a bind source that is a socket, or that is (or contains) a Docker
// socket path — mounting "/", "/run" or the socket itself would hand the container the engine.
func checkMountSource(src string, sockets []string) error {
	clean := filepath.Clean(src)
	paths := []string{clean}
	if r, err := filepath.EvalSymlinks(clean); err == nil && r != clean {
		paths = append(paths, r)
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			return errDockerSocket
		}
		for _, s := range sockets {
			if s == p || strings.HasPrefix(s, strings.TrimSuffix(p, string(filepath.Separator))+string(filepath.Separator)) {
				return errDockerSocket
			}
		}
	}
	return nil
}

// createOptions turns a Spec into the engine's create request. It is pure apart from the
// socket checks on the host file system; it validates the Spec first. With a nil plan (the
// validation before the engine is asked anything) the user is Spec.User or the caller and the
// Mounts are bind mounts; a plan brings the engine's user mapping and, in copy mode, volumes.
func (e *Executor) createOptions(spec sandbox.Spec, runID string, plan *runPlan) (client.ContainerCreateOptions, error) {
	if spec.Path == "" || !path.IsAbs(spec.Path) {
		return client.ContainerCreateOptions{}, fmt.Errorf("path %q: must be an absolute path inside the image", spec.Path)
	}
	if spec.Dir != "" && !path.IsAbs(spec.Dir) {
		return client.ContainerCreateOptions{}, fmt.Errorf("dir %q: must be absolute", spec.Dir)
	}
	u, err := parseUser(spec.User)
	if err != nil {
		return client.ContainerCreateOptions{}, err
	}
	userns, podman := "", false
	if plan != nil {
		u, userns, podman = plan.id.user, plan.id.userns, plan.id.podman
	}
	mounts, err := bindMounts(spec.Mounts, socketPaths(e.daemonHost))
	if err != nil {
		return client.ContainerCreateOptions{}, err
	}
	if plan != nil && plan.copies != nil {
		mounts = plan.volumes
	}
	tmpfs, err := tmpfsMounts(spec.Tmpfs, u, podman)
	if err != nil {
		return client.ContainerCreateOptions{}, err
	}

	labels := make(map[string]string, len(spec.Labels)+2)
	maps.Copy(labels, spec.Labels)
	labels[LabelRun] = runID
	labels[LabelInstance] = e.instance

	env := spec.Env
	if env == nil {
		env = []string{}
	}
	pids := e.pidsLimit
	init := true
	cfg := &container.Config{
		Image:        e.image,
		User:         u.String(),
		AttachStdout: true,
		AttachStderr: true,
		Env:          env,
		Entrypoint:   []string{spec.Path},
		Cmd:          append([]string{}, spec.Args...),
		WorkingDir:   spec.Dir,
		Labels:       labels,
		StopSignal:   "SIGINT",
		// An attached stdin (the Agent Client Protocol): open until the caller's reader ends.
		AttachStdin: spec.Stdin != nil,
		OpenStdin:   spec.Stdin != nil,
		StdinOnce:   spec.Stdin != nil,
	}
	host := &container.HostConfig{
		NetworkMode:    container.NetworkMode(e.network),
		Mounts:         mounts,
		Tmpfs:          tmpfs,
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Privileged:     false,
		AutoRemove:     false,
		Init:           &init,
		IpcMode:        container.IPCModePrivate,
		UsernsMode:     container.UsernsMode(userns),
		LogConfig:      container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     e.memory,
			MemorySwap: e.memory,
			NanoCPUs:   e.nanoCPUs,
			PidsLimit:  &pids,
		},
	}
	return client.ContainerCreateOptions{Config: cfg, HostConfig: host}, nil
}

// bindMounts are the Spec's Mounts as bind mounts, each checked: absolute, and neither an engine
// socket nor a directory holding one.
func bindMounts(ms []sandbox.Mount, sockets []string) ([]mount.Mount, error) {
	mounts := make([]mount.Mount, 0, len(ms))
	for _, m := range ms {
		if !filepath.IsAbs(m.Source) || !path.IsAbs(m.Target) {
			return nil, fmt.Errorf("mount %s:%s: source and target must be absolute", m.Source, m.Target)
		}
		if err := checkMountSource(m.Source, sockets); err != nil {
			return nil, fmt.Errorf("mount %s: %w", m.Source, err)
		}
		mounts = append(mounts, mount.Mount{
			Type:        mount.TypeBind,
			Source:      m.Source,
			Target:      m.Target,
			ReadOnly:    m.ReadOnly,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	return mounts, nil
}

// tmpfsMounts is the engine's tmpfs map of the Spec's Tmpfs (nil when there are none).
func tmpfsMounts(ts []sandbox.Tmpfs, u runUser, podman bool) (map[string]string, error) {
	var tmpfs map[string]string
	for _, t := range ts {
		if !path.IsAbs(t.Target) {
			return nil, fmt.Errorf("tmpfs %s: target must be absolute", t.Target)
		}
		if tmpfs == nil {
			tmpfs = make(map[string]string, len(ts))
		}
		tmpfs[path.Clean(t.Target)] = tmpfsOptions(t, u, podman)
	}
	return tmpfs, nil
}
