// Package docker owns running one Cline process in a hardened Docker container. It is the only
// package of cline-mcp that talks to the Docker engine: it implements sandbox.Executor on
// github.com/moby/moby/client, labels every container it creates, always removes it, and sweeps
// the leftovers of server instances that died.
//
// # Hardening
//
// Every container runs with a read-only root filesystem, all capabilities dropped,
// no-new-privileges, the engine's default seccomp profile, a pids limit, a memory limit (no
// swap), a CPU quota, logging disabled (the output is only ever streamed to the caller, never
// kept on the engine's disk), not privileged, stdin closed, and never with the Docker socket
// mounted. The only writable places are the Spec's Mounts that are not ReadOnly and its tmpfs
// mounts.
//
// # Engines and mounts
//
// sandbox/engine finds the engine like the docker CLI (flag, DOCKER_HOST, Docker contexts,
// fallback sockets of rootless Docker, Docker Desktop and Podman), connects to it (ssh:// through
// `ssh … docker system dial-stdio`) and tells what it is; WithEndpoint hands its choice here.
// Rootless Docker runs Cline as uid 0 (the calling user on the host), rootless Podman as the
// caller with userns keep-id. Mounts are bind mounts when the
// engine sees this machine's files (a probe decides once) and otherwise copied in and out
// through the archive API (copymode.go), the copy back treated as hostile (sandbox/archive).
//
// # Egress
//
// WithEgress decides where a run's container may connect (egress.go): nowhere (network none),
// anywhere its network reaches (open), or — provider — only the endpoints its Spec.Egress and
// the executor's allow-list name, through one egress proxy container per executor (sandbox/egress).
// In provider mode the run container has no network at all (network none): the proxy listens on
// a unix socket in a volume of its own container, which runs mount read-only, and a forwarder in
// that volume carries the run's loopback port to it. The proxy (with its anonymous volume)
// carries the instance label like the runs' containers; Close, RemoveOwn and Sweep remove it.
//
// # Init
//
// Containers run with the engine's init (docker-init, i.e. tini, bind-mounted by the engine, so a
// scratch image needs nothing). The CLI is then not PID 1: the kernel does not drop signals it
// has no handler for, the StopSignal (SIGINT, which the real CLI honours mid-call where it
// ignores a single SIGTERM) is forwarded to it, and the tool processes it spawns are reaped. When
// the CLI exits, init exits with its status (128+n for a signal), and the kernel kills whatever
// else is left in the container, so no descendant can hold the output streams open.
//
// # Liveness and sweeping
//
// Each Executor has an instance id "<hostname>-<pid>-<start>" (sandbox/proc: the start time
// tells a reused pid apart, on Linux, macOS and Windows). Sweep removes containers (then volumes
// and egress networks) whose instance is on this host and provably dead; those of live
// instances, of other hosts, or whose liveness cannot be judged are kept.
package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox/archive"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// Label keys set on every container this package creates.
const (
	LabelRun      = "cline-mcp.run"
	LabelInstance = "cline-mcp.instance"
)

// Defaults of an Executor's settings.
const (
	DefaultImage     = "cline-mcp/cline:latest"
	DefaultNetwork   = "bridge"
	DefaultMemory    = 2 << 30 // bytes
	DefaultPidsLimit = 256
	DefaultNanoCPUs  = 2_000_000_000
	// DefaultTmpfsMB is the size of a Spec.Tmpfs whose SizeMB is zero.
	DefaultTmpfsMB = 256
)

// Hints of the LaunchErrors Run, Ping and ImagePresent return.
const (
	HintEngine = "start the Docker engine (e.g. `sudo systemctl start docker`), or point cline-mcp at one: --docker-host, DOCKER_HOST or a Docker context"
	HintImage  = "build the image: make image (real CLI) or make image-fake (fake CLI for tests)"
	// HintNetwork is CheckNetwork's: name an existing network (docker network ls) or a running
	// container (docker ps) with --docker-network.
	HintNetwork = "pass --docker-network none, bridge, an existing network (docker network ls) or container:<name> of a running container (docker ps)"
)

// pingTTL is how long a successful ping is trusted; runs in a burst then cost one ping.
const pingTTL = 2 * time.Second

// cleanupTimeout bounds the engine calls that remove a container after the run's ctx ended.
const cleanupTimeout = 30 * time.Second

// Client is what an Executor calls on the engine: a subset of *client.Client, which satisfies
// it. Each part of the executor declares its own piece beside its code: containerAPI (the run's
// lifecycle, the mount probe, the egress proxy and the sweep), volumeAPI (copy mode and the
// sweep), networkAPI (the egress network and the network checks), and engine.Asker (what the
// engine is, for the user mapping). Tests fake it by embedding the interface, so a call they did
// not stub panics.
type Client interface {
	containerAPI
	volumeAPI
	networkAPI
	engine.Asker
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	ImageInspect(ctx context.Context, image string, options ...client.ImageInspectOption) (client.ImageInspectResult, error)
	Close() error
}

var _ Client = (*client.Client)(nil)

// Executor runs Specs in containers. It is safe for concurrent use; Close releases the engine
// connection of a client it created itself.
type Executor struct {
	cli       Client
	ownClient bool
	// daemonHost is the engine address ("unix:///var/run/docker.sock"), used to refuse mounts
	// of the socket; empty for an injected client without DaemonHost.
	daemonHost string
	// endpoint is where the engine was found (WithEndpoint), for Describe.
	endpoint engine.Endpoint
	// mounts is the configured mount mode; probed/probedWhy cache auto's decision.
	mounts    MountMode
	probeMu   sync.Mutex
	probed    MountMode
	probedWhy string
	// backLimits bound one copy back; staging bounds the staged files of all copy backs in
	// flight together (copy mode).
	backLimits archive.Limits
	staging    *archive.Budget
	// background counts copy-mode volume removals still running after their Run returned.
	background sync.WaitGroup

	image     string
	network   string
	memory    int64
	pidsLimit int64
	nanoCPUs  int64
	instance  string
	track     func(runID string) (untrack func())
	egress    Egress
	// warm is the pool of started containers (WithWarm; warm.go), nil without one.
	warm *warmPool
	// cache keeps copy mode's volumes of read-only Mounts (copycache.go).
	cache copyCache

	mu        sync.Mutex
	pingedAt  time.Time
	flav      engine.Kind
	flavKnown bool

	sideMu sync.Mutex // guards side, the egress proxy (egress.go)
	side   *sidecar
}

// Option configures an Executor.
type Option func(*Executor) error

// WithImage sets the image every run uses (default DefaultImage).
func WithImage(ref string) Option {
	return func(e *Executor) error {
		if ref == "" {
			return errors.New("image: empty reference")
		}
		e.image = ref
		return nil
	}
}

// WithNetwork sets the network mode: "bridge" (default), "none", the name of a network, or
// "container:<name>" (share the network namespace of a running container).
func WithNetwork(name string) Option {
	return func(e *Executor) error {
		if name == "" {
			return errors.New("network: empty name")
		}
		e.network = name
		return nil
	}
}

// WithMemory sets the memory limit in bytes (default 2 GiB); swap is not allowed on top.
func WithMemory(bytes int64) Option {
	return func(e *Executor) error {
		if bytes < 6<<20 {
			return fmt.Errorf("memory %d: must be at least 6 MiB", bytes)
		}
		e.memory = bytes
		return nil
	}
}

// WithPidsLimit sets the maximum number of processes and threads (default 256).
func WithPidsLimit(n int64) Option {
	return func(e *Executor) error {
		if n < 8 {
			return fmt.Errorf("pids limit %d: must be at least 8", n)
		}
		e.pidsLimit = n
		return nil
	}
}

// WithCPUs sets the CPU quota in CPUs (default 2; 0.5 is half a CPU).
func WithCPUs(cpus float64) Option {
	return func(e *Executor) error {
		if cpus < 0.01 {
			return fmt.Errorf("cpus %g: must be at least 0.01", cpus)
		}
		e.nanoCPUs = int64(cpus * 1e9)
		return nil
	}
}

// WithInstanceID overrides the instance id put on every container (default: InstanceID()).
// Sweep treats the id as this executor's own and never removes its containers.
func WithInstanceID(id string) Option {
	return func(e *Executor) error {
		if id == "" {
			return errors.New("instance id: empty")
		}
		e.instance = id
		return nil
	}
}

// WithEndpoint makes the executor talk to the engine of ep (see engine.Discover) instead of the
// default socket. WithClient wins over it.
func WithEndpoint(ep engine.Endpoint) Option {
	return func(e *Executor) error {
		if ep.Host == "" {
			return errors.New("endpoint: empty host")
		}
		e.endpoint = ep
		return nil
	}
}

// WithTrack makes the executor report each run (its id, before the container is created) to
// track and call the returned func once the container is removed. sandbox/lifeline uses it: when
// the server dies with runs tracked, its watchdog removes every container of the instance.
func WithTrack(track func(runID string) (untrack func())) Option {
	return func(e *Executor) error {
		e.track = track
		return nil
	}
}

// WithMounts sets how Mounts reach the container (default MountsAuto).
func WithMounts(m MountMode) Option {
	return func(e *Executor) error {
		if _, err := ParseMountMode(string(m)); err != nil {
			return err
		}
		e.mounts = m
		return nil
	}
}

// WithCopyLimits sets what a copy back accepts from a container in copy mode (default
// archive.DefaultLimits). lim.Staged bounds the staging of one copy back and of all copy backs
// in flight together.
func WithCopyLimits(lim archive.Limits) Option {
	return func(e *Executor) error {
		if lim.Entries < 1 || lim.Read < 0 || lim.File < 0 || lim.Staged < 0 || lim.Name < 1 || lim.Depth < 1 || lim.Names < 0 {
			return fmt.Errorf("copy limits %+v: every limit must be positive", lim)
		}
		e.backLimits = lim
		return nil
	}
}

// WithClient makes the executor use cli instead of a client built from the endpoint. The
// caller keeps ownership: Executor.Close does not close it.
func WithClient(cli Client) Option {
	return func(e *Executor) error {
		e.cli = cli
		return nil
	}
}

// New returns an executor. Unless WithClient is given, the engine client is built for the
// WithEndpoint endpoint (default: the platform's default socket) and negotiates the API version
// down to the engine's on first use (DOCKER_API_VERSION pins it). New does not contact the
// engine; Ping does.
func New(opts ...Option) (*Executor, error) {
	e := &Executor{
		image:      DefaultImage,
		network:    DefaultNetwork,
		memory:     DefaultMemory,
		pidsLimit:  DefaultPidsLimit,
		nanoCPUs:   DefaultNanoCPUs,
		endpoint:   engine.Default(),
		mounts:     MountsAuto,
		backLimits: archive.DefaultLimits,
		egress:     Egress{Mode: EgressOpen, Image: DefaultEgressImage},
	}
	for _, opt := range opts {
		if err := opt(e); err != nil {
			return nil, fmt.Errorf("docker executor: %w", err)
		}
	}
	if e.cli == nil {
		cli, err := engine.NewClient(e.endpoint)
		if err != nil {
			return nil, fmt.Errorf("docker client: %w", err)
		}
		e.cli, e.ownClient = cli, true
	}
	if h, ok := e.cli.(interface{ DaemonHost() string }); ok {
		e.daemonHost = h.DaemonHost()
	}
	if e.instance == "" {
		e.instance = InstanceID()
	}
	e.staging = archive.NewBudget(e.backLimits.Staged)
	if err := CheckEgressNetwork(e.egress.Mode, e.network); err != nil {
		return nil, fmt.Errorf("docker executor: %w", err)
	}
	return e, nil
}

// Close stops the egress proxy (and removes its volume) if one runs, waits for the background
// removal of copy-mode volumes, then releases the engine client if New created it. Runs in
// flight must have returned.
func (e *Executor) Close() error {
	e.closeWarm() // before the proxy: warm containers mount its volume
	e.closeEgress()
	e.background.Wait()
	e.closeCache()
	if e.ownClient {
		return e.cli.Close()
	}
	return nil
}

// Endpoint is where the engine was found.
func (e *Executor) Endpoint() engine.Endpoint { return e.endpoint }

// Image is the image reference every run uses.
func (e *Executor) Image() string { return e.image }

// Instance is the instance id put on this executor's containers.
func (e *Executor) Instance() string { return e.instance }

// Ping checks that the engine answers. The error is a *sandbox.LaunchError (Op "docker ping")
// with a hint on how to start the engine. A success is cached for a short while.
func (e *Executor) Ping(ctx context.Context) error {
	e.mu.Lock()
	fresh := !e.pingedAt.IsZero() && time.Since(e.pingedAt) < pingTTL
	e.mu.Unlock()
	if fresh {
		return nil
	}
	if _, err := e.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("docker ping: %w", ctx.Err())
		}
		return engineError("docker ping", err)
	}
	e.mu.Lock()
	e.pingedAt = time.Now()
	e.mu.Unlock()
	return nil
}

// forgetPing drops the cached ping after the engine stopped answering.
func (e *Executor) forgetPing() {
	e.mu.Lock()
	e.pingedAt = time.Time{}
	e.mu.Unlock()
}

// ImagePresent reports whether the executor's image exists on the engine. It does not ping
// first; a connection failure is a *sandbox.LaunchError with the engine hint.
func (e *Executor) ImagePresent(ctx context.Context) (bool, error) {
	_, ok, err := e.inspectImage(ctx)
	return ok, err
}

// imageInfo is what a run reports of the image it ran: the engine's id and the CLI the image
// says it holds (its LabelCLI).
type imageInfo struct {
	id, cli string
}

// LabelCLI is the image label naming the Cline CLI inside ("cline@3.0.65"; images/cline).
const LabelCLI = "io.cline-mcp.cli"

// inspectImage is ImagePresent with what the run reports of the image.
func (e *Executor) inspectImage(ctx context.Context) (imageInfo, bool, error) {
	res, err := e.cli.ImageInspect(ctx, e.image)
	switch {
	case err == nil:
		info := imageInfo{id: res.ID}
		if res.Config != nil {
			info.cli = res.Config.Labels[LabelCLI]
		}
		return info, true, nil
	case cerrdefs.IsNotFound(err):
		return imageInfo{}, false, nil
	case client.IsErrConnectionFailed(err):
		return imageInfo{}, false, engineError("image inspect", err)
	}
	return imageInfo{}, false, fmt.Errorf("image inspect %s: %w", e.image, err)
}

// isNotFound reports an engine "no such container/image" answer; cleanup counts it as success.
func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }
