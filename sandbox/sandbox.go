// Package sandbox is the shared vocabulary of the places a Cline run can execute: the Spec of one
// run, the Exit it ends with, and the Executor interface that sandbox/host (a process group on this
// machine) and sandbox/docker (a hardened container) implement. It imports only the standard
// library so that every other package can depend on it.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// InstanceEnv is the environment variable that carries the server's instance id
// ("<host>-<pid>-<start>", sandbox/proc) into every Cline process it starts on the host, so a
// later server can find and end the processes of an instance that died.
const InstanceEnv = "CLINE_MCP_INSTANCE"

// Isolation names where a run executes. The zero value is not valid; use IsolationHost.
type Isolation string

const (
	IsolationHost   Isolation = "host"
	IsolationDocker Isolation = "docker"
	// IsolationKubernetes runs Cline in a pod (sandbox/kubernetes): a container like Docker's,
	// on a cluster.
	IsolationKubernetes Isolation = "kubernetes"
)

// Isolations lists every Isolation, weakest first; the tools' schemas take their enum from it.
var Isolations = []Isolation{IsolationHost, IsolationDocker, IsolationKubernetes}

// Container reports an isolation that runs Cline in a container (Docker's or a pod): a server
// has one container executor, and a call that asks for either gets the server's.
func (i Isolation) Container() bool { return i == IsolationDocker || i == IsolationKubernetes }

// AtLeast reports whether i isolates at least as much as floor.
func (i Isolation) AtLeast(floor Isolation) bool {
	return i.rank() >= floor.rank()
}

func (i Isolation) rank() int {
	switch i {
	case IsolationHost:
		return 1
	case IsolationDocker, IsolationKubernetes:
		return 2
	}
	return 0
}

// ParseIsolation accepts "host", "docker" or "kubernetes".
func ParseIsolation(s string) (Isolation, error) {
	switch Isolation(s) {
	case IsolationHost, IsolationDocker, IsolationKubernetes:
		return Isolation(s), nil
	}
	return "", fmt.Errorf("isolation %q: must be host, docker or kubernetes", s)
}

// Mount is a host directory the run needs at Target inside a container. It says what the run
// needs, not how it gets there: an executor whose engine sees this machine's paths shares the
// directory (a bind mount); one whose engine cannot (a remote or CI engine, a pod) copies Source
// in before the start and brings back exactly what Return names after the exit. The bridge
// always uses Target == Source so paths in Cline's answers are valid on the host. A Mount may
// lie inside another one (a read-only .git inside a writable checkout); what it covers then
// follows its own settings, never the outer Mount's. The host executor ignores mounts.
type Mount struct {
	Source string
	Target string
	// ReadOnly: the run cannot change it. A copying executor brings nothing of it back.
	ReadOnly bool
	// Return is what of the run's changes must reach Source when the executor copies instead
	// of sharing (a shared directory has every change at once). The zero value brings nothing
	// back: the run's changes are discarded with the copy. Ignored when ReadOnly.
	Return Return
}

// Return names the changes a copying executor brings back from a writable Mount. Whatever
// comes back is treated as hostile: nothing outside Source is ever written, no device or
// special file is created, nothing is written below a symbolic link, sizes and entry counts are
// bounded, and no path with a .git component is ever written back. A copy that breaks a rule
// is refused as a whole (a *CopyBackError) and Source is left as it was.
type Return struct {
	// Tree brings back the whole tree: created, modified and deleted files and directories,
	// permission bits, and symbolic links as links — except what lies under another Mount
	// and anything named .git. Files the run did not change are not rewritten.
	Tree bool
	// Files brings back only these files (slash-separated, relative to Target), each as a
	// regular file; one the run removed, or turned into anything but a regular file, is
	// removed from Source.
	Files []string
}

// IsZero reports whether nothing comes back.
func (r Return) IsZero() bool { return !r.Tree && len(r.Files) == 0 }

// Tmpfs is a writable in-memory directory inside the container (HOME, /tmp).
type Tmpfs struct {
	Target string
	SizeMB int
}

// Spec is one run of the Cline executable. The executor never uses a shell: Path and Args are
// passed as they are. Without Stdin the child's stdin is empty (/dev/null on the host, closed in a
// container) because the real CLI reads a non-TTY stdin to EOF and appends it to the prompt.
type Spec struct {
	// Path is the executable: a host path for the host executor, a path inside the image for
	// docker. Args excludes argv[0].
	Path string
	Args []string
	// Env is the complete environment of the child ("KEY=value"). The host executor does not
	// add the server's environment by itself; the caller decides.
	Env []string
	// Dir is the working directory of the child.
	Dir string

	// Stdout and Stderr receive the child's output as it arrives. They are written from
	// executor goroutines, one writer per stream, never concurrently for the same stream.
	// The executor never writes to the server's own stdout.
	Stdout io.Writer
	Stderr io.Writer
	// Stdin, when set, is copied to the child's stdin (the Agent Client Protocol speaks on it);
	// its EOF closes the child's stdin. The caller closes its writer; the executor stops copying
	// when the process exited.
	Stdin io.Reader

	// StopGrace is the time between the polite stop (SIGINT to the process group, or
	// `docker stop`) and the forced kill when ctx ends. Zero means DefaultStopGrace.
	StopGrace time.Duration
	// SettleGrace is how long the executor keeps reading stdout/stderr after the main process
	// exited, for a grandchild that still holds the pipes. Zero means DefaultSettleGrace.
	SettleGrace time.Duration

	// Container-only fields; the host executor ignores them.
	Mounts []Mount
	Tmpfs  []Tmpfs
	// Labels are set on the container in addition to the executor's own run/instance labels.
	Labels map[string]string
	// User is "uid:gid" for the container process; empty means the caller's uid:gid.
	User string
	// Egress are the endpoints ("host:port") this run needs to reach besides those its
	// executor allows every run (the provider's API); used when the executor's egress is
	// restricted to an allow-list.
	Egress []string
	// AllowOnly, when not nil, is the part of the executor's own allowed endpoints (--egress-allow)
	// this run may reach: a repository's policy narrowed them.
	AllowOnly *[]string
	// Credential, when set, is the provider credential the executor's egress proxy adds to the
	// run's provider requests, so the run itself never holds it: the run's settings point its
	// provider at ProviderProxyURL and carry a placeholder instead. An executor that cannot
	// keep it outside (no egress proxy) refuses the Spec instead of passing it in.
	Credential *Credential
	// NotWarm says that no later run can take a warm container or pod of this run's shape (a
	// conversation's, whose data dir is its own): the executor does not keep any of it.
	NotWarm bool
	// Standby is a run started ahead of its call (a spare agent): it never takes room a call
	// needs. An executor whose cluster has no room for it fails it at once instead of waiting or
	// giving up what it keeps ready for calls.
	Standby bool
	// Started, when set, is told what the container was created with, before it starts (what
	// Exit.Container carries at the end): a run that outlives its call reports it early.
	Started func(ContainerReport)
	// Live, when set, is given the run's Settler before it starts, by an executor whose egress
	// proxy can settle the run's grant between two uses of a kept process (a container session's
	// turns); not called otherwise.
	Live func(Settler)
	// Sync, when set, is given the run's Syncer before it starts, by an executor that copies the
	// mounts in and back instead of sharing them (a pod, a Docker copy-mode container): what a
	// kept process's turn wrote comes back between turns, not only when the container ends. Not
	// called by an executor that shares.
	Sync func(Syncer)
}

// Syncer brings back, while the container runs, what the Return of its writable mounts names,
// through the same checks as the copy back at its end (which still follows): each mount's source
// changes whole or not at all.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Settler settles a running container's egress grant: it returns what the proxy refused and
// counted since the run started or was last settled, and from then on lends the run cred (with
// its fresh allowance), or no credential at all when cred is nil.
type Settler interface {
	Settle(ctx context.Context, cred *Credential) (*EgressReport, error)
}

// ProviderProxyAddr is where a run whose Spec has a Credential finds its provider: a listener on
// the run's own loopback that hands each request to the egress proxy, which adds the credential
// and sends it on to Credential.Upstream.
const ProviderProxyAddr = "127.0.0.1:3129"

// Credential is a provider credential kept outside the run (Spec.Credential).
type Credential struct {
	// Upstream is the provider's origin the proxy forwards to: scheme (https, or http when the
	// user's own baseUrl was plain http) and host[:port]; the request path is the run's own.
	Upstream string
	// Headers are set on every forwarded request, replacing whatever the run sent under these
	// names and under Authorization, X-Api-Key and Api-Key: the credential, and the provider's
	// custom headers from the user's settings. Never logged, never reported, scrubbed from
	// the answers the run gets.
	Headers map[string]string
	// BasePath is the path of the provider's base URL ("/v1"), Endpoints the "METHOD /suffix"
	// below it the run's CLI calls ("POST /chat/completions"): the credential is added to those
	// requests only; every other method and path of the upstream is refused.
	BasePath  string
	Endpoints []string
	// Allowance is what the run may spend with the credential; the proxy refuses its provider
	// requests past it (a Refusal with Budget set).
	Allowance Allowance
}

// Allowance bounds a run's provider requests at the egress proxy (Credential.Allowance); zero
// fields set no limit.
type Allowance struct {
	// Requests is how many provider requests may be answered with success.
	Requests int
	// CostUSD is the most the tokens the answers report may cost, priced at InputUSDPerMTok
	// and OutputUSDPerMTok (USD per million tokens).
	CostUSD                           float64
	InputUSDPerMTok, OutputUSDPerMTok float64
	// Limits says where the numbers come from, for the refusal.
	Limits string
}

// Defaults for Spec's graces. SettleGrace matches the seed's 500 ms settlement rule.
const (
	DefaultStopGrace   = 1 * time.Second
	DefaultSettleGrace = 500 * time.Millisecond
)

// Exit is how a run ended.
type Exit struct {
	// Code is the exit status, or -1 when the process was ended by a signal.
	Code int
	// Signal is the terminating signal's name ("SIGKILL"), empty for a normal exit.
	// A container that exits with 128+n is reported as Code 128+n and Signal of n.
	Signal string
	// Stopped is true when the executor itself stopped the run because ctx ended
	// (timeout or cancellation), whatever the exit code then was.
	Stopped bool
	// StreamsCut is true when the streams were closed by the executor after SettleGrace
	// because something still held them open after the main process exited.
	StreamsCut bool
	// OOMKilled is true when a container executor saw the engine kill the run for exceeding
	// its memory limit; Signal is then "SIGKILL".
	OOMKilled bool
	// Duration is the wall time from start to settlement.
	Duration time.Duration
	// Egress reports what the executor's egress proxy refused during the run and which
	// non-provider endpoints it reached; nil when no proxy guarded the run or there is neither.
	// (A pointer keeps Exit comparable.)
	Egress *EgressReport
	// Container is what a container executor enforced for the run, read from the request it
	// sent the engine and the image it ran; nil for the host executor and for runs that never
	// reached a create.
	Container *ContainerReport
}

// ContainerReport is what a container executor enforced for one run — taken from the create
// request the engine accepted and the image it inspected, not from its options — so a caller
// can assert it.
type ContainerReport struct {
	Engine  string // "docker" or "podman"
	Image   string // as configured
	ImageID string // the image that ran (the engine's id)
	// CLI is what the image says it holds (its io.cline-mcp.cli label, e.g. "cline@3.0.65");
	// empty when the image does not say.
	CLI  string
	User string // uid:gid inside the container
	// UsernsMode is the engine's user namespace mode ("keep-id" on rootless Podman), "" for
	// the engine's default.
	UsernsMode      string
	ReadOnlyRoot    bool
	CapDrop         []string
	NoNewPrivileges bool
	Privileged      bool
	// Network is the container's network mode: "none", or the network it joined.
	Network string
	// Egress is the executor's egress mode for the run (none, provider, open, policy).
	Egress EgressMode
	// Allowed is what an EgressPolicy run's policy lets it reach, in the policy's words
	// ("10.0.0.5/32:443/TCP", "kube-system/k8s-app=kube-dns:53/UDP"); empty otherwise.
	Allowed []string
	// Mounts are the run's mounts: where, read-only or writable, bind or copied.
	Mounts []MountReport
	// CredentialOutside is true when the run's provider credential stayed with the egress
	// proxy (Spec.Credential) and the container got a placeholder.
	CredentialOutside bool
	MemoryBytes       int64
	PidsLimit         int64
}

// MountReport is one mount of a container run.
type MountReport struct {
	Target   string
	ReadOnly bool
	// Kind is "bind" (the host path itself), "copy" (a volume filled with a copy, copy mode)
	// or "tmpfs" (memory, gone with the container).
	Kind string
}

// EgressReport is what an egress proxy refused during one run, and which endpoints other than
// the run's own provider (Spec.Egress) it reached: each of those is a channel out of the run
// that the caller should see.
type EgressReport struct {
	Refused []Refusal
	Allowed []Reached
	// Answers and SpentUSD are what the proxy counted of a run whose credential it kept
	// (Spec.Credential): successful provider answers, and their tokens priced at the
	// allowance's rates (0 without a cost limit).
	Answers  int
	SpentUSD float64
}

// Reached is an endpoint a run reached through the egress proxy that is not its provider's: the
// endpoint, how often, and the allow-list entry that let it through.
type Reached struct {
	Target string
	Count  int
	Rule   string
}

// Refusal is a connection a container executor's egress proxy refused: the endpoint, how often,
// and why. Never a payload.
type Refusal struct {
	Target string
	Count  int
	Reason string
	// Budget is set when the proxy refused a provider request because the run's allowance
	// (Credential.Allowance) was spent.
	Budget bool
}

// Executor runs one Spec to completion. Run blocks until the child exited and its output was
// settled, and it stops (polite stop, StopGrace, kill — of the whole process tree or container)
// when ctx ends, returning the Exit with Stopped set and a nil error. Everything it started is
// stopped when Run returns (copies of Mounts it made may still be being deleted: it owns them
// until it is closed), and the changes its Mounts' Return names have reached the host (also
// after a stop). A non-nil error with a zero Exit means the run could not be started at all; it
// is a *LaunchError when the cause is on the user's side (missing executable, engine down, image
// missing). A *CopyBackError comes with the Exit of the run that did happen: only bringing its
// changes back failed. Implementations are safe for concurrent use.
type Executor interface {
	Run(ctx context.Context, spec Spec) (Exit, error)
}

// CopyBackError says that a run happened but what it changed could not be brought back to the
// host (a copying executor refused the container's archive, or the engine failed to send it).
// Source is then exactly as it was before the run: a copy back is all or nothing.
type CopyBackError struct {
	// Source is the host directory the changes were meant for.
	Source string
	Err    error
}

func (e *CopyBackError) Error() string {
	return "copy the run's changes back to " + e.Source + ": " + e.Err.Error() + " (nothing was written there)"
}

func (e *CopyBackError) Unwrap() error { return e.Err }

// LaunchError says why a run could not start and what the user can do about it.
type LaunchError struct {
	// Op is the step that failed ("start", "docker ping", "image inspect").
	Op string
	// Hint is one sentence telling the user how to fix it.
	Hint string
	// Missing is true when the executable (or image) does not exist, which the bridge may treat
	// as the CLI being mid-update.
	Missing bool
	Err     error
}

func (e *LaunchError) Error() string {
	msg := e.Op + ": " + e.Err.Error()
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *LaunchError) Unwrap() error { return e.Err }

// IsLaunchError reports whether err is or wraps a *LaunchError.
func IsLaunchError(err error) bool {
	var le *LaunchError
	return errors.As(err, &le)
}

// OrDefault is d, or def when d is not set (zero or negative): how executors read a Spec's graces.
func OrDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
