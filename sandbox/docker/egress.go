package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// Egress modes of Docker runs (WithEgress): sandbox.EgressMode's values, named here too.
const (
	// EgressProvider gives every run no network at all; its only way out is an egress proxy
	// container (sandbox/egress) reached through a unix socket in the proxy's volume, which
	// lets each run reach exactly its Spec.Egress endpoints plus Egress.Allow.
	EgressProvider = sandbox.EgressProvider
	// EgressNone gives runs no network at all (network mode none).
	EgressNone = sandbox.EgressNone
	// EgressOpen runs containers on the executor's network (WithNetwork) as they are.
	EgressOpen = sandbox.EgressOpen
)

// DefaultEgressImage is the egress proxy's image (images/egress).
const DefaultEgressImage = "cline-mcp/egress:latest"

// LabelEgress marks the egress proxy container ("proxy") of an executor (and the internal
// networks ("network") that servers before the unix-socket proxy made); both also carry
// LabelInstance, so Sweep and RemoveOwn find them.
const LabelEgress = "cline-mcp.egress"

// HintEgressImage is the hint of a missing egress proxy image.
const HintEgressImage = "build the egress proxy image: make image-egress (make image and make image-fake build it too), or pass --docker-egress none|open"

// Egress is the network policy of an executor's runs.
type Egress struct {
	Mode  sandbox.EgressMode // EgressProvider (the default), EgressNone or EgressOpen
	Image string             // the proxy's image (EgressProvider); default DefaultEgressImage
	Allow []string           // endpoints every run may reach (EgressProvider): "host:port", "*.domain:port"
}

// WithEgress sets the network policy of runs (default: EgressOpen on the WithNetwork network, as
// before egress existed). In EgressProvider mode the WithNetwork network is the proxy's way out:
// it must be "bridge" or a named network ("none" has no way out, "host" would hand the proxy every
// service of the host, and "container:<name>" another container's namespace).
func WithEgress(eg Egress) Option {
	return func(e *Executor) error {
		if eg.Mode == "" {
			eg.Mode = EgressProvider
		}
		if !slices.Contains(sandbox.EgressModes, eg.Mode) {
			return fmt.Errorf("egress %q: want provider, none or open", eg.Mode)
		}
		if eg.Image == "" {
			eg.Image = DefaultEgressImage
		}
		allow := make([]string, 0, len(eg.Allow))
		for _, a := range eg.Allow {
			ep, err := egress.ParseEndpoint(a)
			if err != nil {
				return fmt.Errorf("egress allow: %w", err)
			}
			allow = append(allow, ep)
		}
		eg.Allow = allow
		e.egress = eg
		return nil
	}
}

// Egress is the executor's network policy.
func (e *Executor) Egress() Egress { return e.egress }

// CheckEgressNetwork reports a WithNetwork value the egress mode cannot use.
func CheckEgressNetwork(mode sandbox.EgressMode, network string) error {
	if mode != EgressProvider {
		return nil
	}
	if network == "none" || network == "host" || strings.HasPrefix(network, "container:") {
		return fmt.Errorf("egress provider: the proxy reaches the provider through the network %q, which it cannot use (none has no way out, host would give it the host's services, container:<name> another container's namespace); use bridge or a named network, or egress none/open", network)
	}
	return nil
}

// sidecar is the running egress proxy of an executor: its container (whose volume runs mount)
// and the control client on the container's attached stdin/stdout.
type sidecar struct {
	id      string // proxy container id
	ctl     *egress.Client
	conn    *client.HijackedResponse
	untrack func()
}

func (s *sidecar) alive() bool {
	select {
	case <-s.ctl.Done():
		return false
	default:
		return true
	}
}

// runEgress is one run's place in the egress policy.
type runEgress struct {
	e        *Executor
	side     *sidecar
	token    string
	provider []string // the Spec's own endpoints (ParseEndpoint form): not reported as extra
	cred     bool     // the proxy keeps the run's provider credential (Spec.Credential)
	once     sync.Once
	sum      egress.Summary
}

// beginEgress prepares a run in EgressProvider mode: it starts the executor's proxy on first use
// (a later run reuses it) and grants the run's token its endpoints. It returns nil for the other
// modes.
func (e *Executor) beginEgress(ctx context.Context, spec sandbox.Spec) (*runEgress, error) {
	if e.egress.Mode != EgressProvider {
		if spec.Credential != nil {
			return nil, fmt.Errorf("docker run: the provider credential can stay outside the container only with egress provider (the proxy adds it), not %s", e.egress.Mode)
		}
		return nil, nil
	}
	side, err := e.sidecar(ctx)
	if err != nil {
		return nil, err
	}
	var provider []string
	for _, ep := range spec.Egress {
		if p, err := egress.ParseEndpoint(ep); err == nil {
			provider = append(provider, p)
		}
	}
	allow := append(append([]string(nil), provider...), narrowed(e.egress.Allow, spec.AllowOnly)...)
	token, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	gctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	var cred *egress.Credential
	if c := spec.Credential; c != nil {
		cred = egressCredential(c)
		if !side.ctl.Has(egress.FeatureCredentialPolicy) {
			return nil, &sandbox.LaunchError{Op: "egress grant", Hint: HintEgressImage, Missing: true,
				Err: errors.New("the egress proxy image cannot keep the provider's credential outside the container: it is older than this server")}
		}
	}
	if err := side.ctl.Grant(gctx, token, allow, cred); err != nil {
		return nil, &sandbox.LaunchError{Op: "egress grant", Err: err,
			Hint: "the egress proxy container stopped answering; the next call starts a new one"}
	}
	return &runEgress{e: e, side: side, token: token, provider: provider, cred: cred != nil}, nil
}

// narrowed is the part of the executor's allowed endpoints that only names (nil: all of them).
func narrowed(allow []string, only *[]string) []string {
	if only == nil {
		return allow
	}
	var out []string
	for _, a := range allow {
		if slices.Contains(*only, a) {
			out = append(out, a)
		}
	}
	return out
}

// egressCredential is the grant's form of c: the proxy adds it only to c's endpoints, within its
// allowance.
func egressCredential(c *sandbox.Credential) *egress.Credential {
	a := c.Allowance
	return &egress.Credential{Upstream: c.Upstream, Headers: c.Headers, BasePath: c.BasePath, Endpoints: c.Endpoints,
		Allowance: egress.Allowance{Requests: a.Requests, CostUSD: a.CostUSD, InputUSDPerMTok: a.InputUSDPerMTok,
			OutputUSDPerMTok: a.OutputUSDPerMTok, Limits: a.Limits}}
}

// applyEgress gives the container the network of the run's egress mode: none, or the
// executor's network (open). In provider mode it has no network either: it mounts the proxy's
// volume read-only and starts through the forwarder there, which listens on its loopback
// (egress.ForwardAddr, where the proxy variables point, with the run's token as the user name)
// and carries each connection to the proxy's unix socket.
func (e *Executor) applyEgress(opts *client.ContainerCreateOptions, r *runEgress) {
	switch e.egress.Mode {
	case EgressNone:
		opts.HostConfig.NetworkMode = "none"
	case EgressProvider:
		opts.HostConfig.NetworkMode = "none"
		if r == nil {
			return
		}
		opts.HostConfig.VolumesFrom = []string{r.side.id + ":ro"}
		fwd := []string{egress.Forwarder, "forward"}
		if r.cred {
			// The run's provider requests go to its loopback (its settings' baseUrl), from
			// there to the proxy, which adds the credential the run never had.
			fwd = append(fwd, "-provider", egress.ProviderAddr)
		}
		opts.Config.Entrypoint = append(append(fwd, "--"), opts.Config.Entrypoint...)
		proxy := "http://" + r.token + ":x@" + egress.ForwardAddr
		noProxy := "localhost,127.0.0.1,::1"
		opts.Config.Env = append(withoutProxyEnv(opts.Config.Env),
			"HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "https_proxy="+proxy, "http_proxy="+proxy,
			"NO_PROXY="+noProxy, "no_proxy="+noProxy)
	}
}

// withoutProxyEnv drops proxy variables a caller passed: in provider mode the egress proxy is
// the only way out.
func withoutProxyEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// live gives spec.Live the run's grant when its proxy can settle it.
func (r *runEgress) live(spec sandbox.Spec) {
	if r != nil && spec.Live != nil && r.side.ctl.Has(egress.FeatureSettle) {
		spec.Live(r)
	}
}

// keepsCredential reports whether the proxy holds the run's provider credential.
func (r *runEgress) keepsCredential() bool { return r != nil && r.cred }

// end revokes the run's grant (once) and returns what the proxy refused and which endpoints
// other than the Spec's own the run reached since its last settle (nil when neither). It runs
// after the container is gone; its own timeout keeps a wedged proxy from holding the call.
func (r *runEgress) end(ctx context.Context) *sandbox.EgressReport {
	if r == nil {
		return nil
	}
	r.once.Do(func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		r.sum, _ = r.side.ctl.Revoke(rctx, r.token)
	})
	return r.report(r.sum)
}

// Settle ends a turn of a kept container: what the proxy did for the run since its start or
// last settle, and the credential it lends from now on (nil: none until the next turn).
func (r *runEgress) Settle(ctx context.Context, cred *sandbox.Credential) (*sandbox.EgressReport, error) {
	var ec *egress.Credential
	if cred != nil {
		ec = egressCredential(cred)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sum, err := r.side.ctl.Settle(sctx, r.token, ec)
	if err != nil {
		return nil, err
	}
	return r.report(sum), nil
}

// report is what a summary of the proxy says of the run: its refusals and the endpoints other
// than the Spec's own it reached (nil when neither).
func (r *runEgress) report(sum egress.Summary) *sandbox.EgressReport {
	var rep sandbox.EgressReport
	for _, c := range sum.Refused {
		rep.Refused = append(rep.Refused, sandbox.Refusal{Target: c.Target, Count: c.Count, Reason: c.Reason, Budget: c.Budget})
	}
	for _, c := range sum.Allowed {
		if c.Rule != "" && slices.Contains(r.provider, c.Rule) {
			continue
		}
		rep.Allowed = append(rep.Allowed, sandbox.Reached{Target: c.Target, Count: c.Count, Rule: c.Rule})
	}
	rep.Answers, rep.SpentUSD = sum.Answers, sum.SpentUSD
	if len(rep.Refused)+len(rep.Allowed) == 0 && rep.Answers == 0 && rep.SpentUSD == 0 {
		return nil
	}
	return &rep
}

// sidecar returns the executor's running egress proxy, starting it
// when there is none or the last one died.
func (e *Executor) sidecar(ctx context.Context) (*sidecar, error) {
	e.sideMu.Lock()
	defer e.sideMu.Unlock()
	if e.side != nil {
		if e.side.alive() {
			return e.side, nil
		}
		e.stopSidecar(ctx, e.side)
		e.side = nil
	}
	s, err := e.startSidecar(ctx)
	if err != nil {
		return nil, err
	}
	e.side = s
	return s, nil
}

// startSidecar creates the proxy container on the executor's network (its way out), attaches
// to its stdin and stdout, starts it and waits until it listens on its unix socket. Nothing on
// the network reaches the proxy (it listens on no TCP port); runs reach it only through the
// socket in its volume. It carries the instance label; on failure it is removed.
func (e *Executor) startSidecar(ctx context.Context) (s *sidecar, err error) {
	if err := e.checkEgressImage(ctx); err != nil {
		return nil, err
	}
	suffix, err := randomHex(6)
	if err != nil {
		return nil, err
	}
	name := "cline-mcp-egress-" + suffix
	s = &sidecar{untrack: func() {}}
	if e.track != nil {
		// Tracked first: a server that dies from here on has its watchdog remove the proxy
		// (RemoveOwn).
		s.untrack = e.track("egress-" + suffix)
	}
	defer func() {
		if err != nil {
			e.stopSidecar(ctx, s)
		}
	}()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	pids := int64(64)
	init := true
	created, err := e.cli.ContainerCreate(cctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image: e.egress.Image, User: "65534:65534",
			Labels:      map[string]string{LabelInstance: e.instance, LabelEgress: "proxy"},
			AttachStdin: true, AttachStdout: true, AttachStderr: true, OpenStdin: true, StdinOnce: true,
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    container.NetworkMode(e.network),
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			Init:           &init,
			IpcMode:        container.IPCModePrivate,
			LogConfig:      container.LogConfig{Type: "none"},
			Resources:      container.Resources{Memory: 128 << 20, MemorySwap: 128 << 20, PidsLimit: &pids, NanoCPUs: e.nanoCPUs},
		},
	})
	if err != nil {
		return nil, e.launchError("egress proxy create", name, err)
	}
	s.id = created.ID
	att, err := e.cli.ContainerAttach(cctx, s.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, e.launchError("egress proxy attach", s.id, err)
	}
	s.conn = &att.HijackedResponse
	out, outW := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(outW, io.Discard, att.Reader)
		_ = outW.CloseWithError(err)
	}()
	s.ctl = egress.NewClient(out, att.Conn)
	if _, err := e.cli.ContainerStart(cctx, s.id, client.ContainerStartOptions{}); err != nil {
		return nil, e.launchError("egress proxy start", s.id, err)
	}
	addr, err := s.ctl.Ready(cctx)
	if err != nil {
		return nil, fmt.Errorf("egress proxy %s did not start: %w", name, err)
	}
	if addr != egress.SocketPath {
		return nil, &sandbox.LaunchError{Op: "egress proxy start", Hint: HintEgressImage,
			Err: fmt.Errorf("egress proxy %s listens on %q, not on the socket %s: the image is older than this server", name, addr, egress.SocketPath)}
	}
	return s, nil
}

// checkEgressImage checks that the proxy's image exists and declares the volume runs mount.
func (e *Executor) checkEgressImage(ctx context.Context) error {
	r, err := e.cli.ImageInspect(ctx, e.egress.Image)
	switch {
	case isNotFound(err):
		return &sandbox.LaunchError{Op: "image inspect", Hint: HintEgressImage, Missing: true,
			Err: fmt.Errorf("egress proxy image %s not found", e.egress.Image)}
	case client.IsErrConnectionFailed(err):
		return engineError("image inspect", err)
	case err != nil:
		return fmt.Errorf("image inspect %s: %w", e.egress.Image, err)
	}
	if r.Config == nil || r.Config.Volumes == nil {
		return &sandbox.LaunchError{Op: "image inspect", Hint: HintEgressImage, Missing: true,
			Err: fmt.Errorf("egress proxy image %s declares no volume %s: it is older than this server", e.egress.Image, egress.VolumeDir)}
	}
	if _, ok := r.Config.Volumes[egress.VolumeDir]; !ok {
		return &sandbox.LaunchError{Op: "image inspect", Hint: HintEgressImage, Missing: true,
			Err: fmt.Errorf("egress proxy image %s declares no volume %s: it is older than this server", e.egress.Image, egress.VolumeDir)}
	}
	return nil
}

// stopSidecar ends the proxy (its stdin closes, it exits), removes its container with its
// volume, and stops tracking it. Best effort, on its own timeout; "not found" counts as done.
func (e *Executor) stopSidecar(ctx context.Context, s *sidecar) {
	if s.conn != nil {
		_ = s.conn.CloseWrite()
		s.conn.Close()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if s.id != "" {
		_, _ = e.cli.ContainerRemove(rctx, s.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
	s.untrack()
}

// closeEgress stops the executor's proxy, if one runs.
func (e *Executor) closeEgress() {
	e.sideMu.Lock()
	defer e.sideMu.Unlock()
	if e.side != nil {
		e.stopSidecar(context.Background(), e.side)
		e.side = nil
	}
}

// removeNetworks removes the networks labelled with an instance that pick accepts; the
// containers on them must be gone first. "Not found" counts as done by someone else.
func (e *Executor) removeNetworks(ctx context.Context, label string, pick func(instance string) bool) (removed int, err error) {
	list, err := e.cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return 0, engineError("network list", err)
		}
		return 0, fmt.Errorf("network list %s: %w", label, err)
	}
	var errs []error
	for _, n := range list.Items {
		if !pick(n.Labels[LabelInstance]) {
			continue
		}
		_, rerr := e.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
		switch {
		case rerr == nil:
			removed++
		case isNotFound(rerr):
		default:
			errs = append(errs, fmt.Errorf("network remove %s: %w", n.Name, rerr))
		}
	}
	return removed, errors.Join(errs...)
}

// EgressImagePresent reports whether the egress proxy's image exists on the engine.
func (e *Executor) EgressImagePresent(ctx context.Context) (bool, error) {
	return e.imagePresent(ctx, e.egress.Image)
}

// CheckEgressImage checks that the egress proxy's image exists and is one that serves runs
// without a network (it declares the volume runs mount); otherwise a *sandbox.LaunchError with
// HintEgressImage (Missing set).
func (e *Executor) CheckEgressImage(ctx context.Context) error { return e.checkEgressImage(ctx) }

// imagePresent reports whether image exists on the engine.
func (e *Executor) imagePresent(ctx context.Context, image string) (bool, error) {
	_, err := e.cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	case client.IsErrConnectionFailed(err):
		return false, engineError("image inspect", err)
	}
	return false, fmt.Errorf("image inspect %s: %w", image, err)
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
