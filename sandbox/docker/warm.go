package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// warmPrefix names the slot directories: "<prefix><instance>-<random>" in the slot base, so
// that RemoveOwn finds those of its instance after a crash.
const warmPrefix = "cline-mcp-warm-"

// warmRefillDelay is how long after a claim its replacement waits to be started, unless the call
// ends first. Creating and starting a container is the engine's heaviest work; started at the
// claim, it ran alongside the call's own start and run (on a 2-core machine a short warm call
// took 10-30 % longer beside it). A long call (the real CLI thinks for seconds) still gets its
// replacement ready for the next one while it runs.
const warmRefillDelay = 2 * time.Second

// warmPool keeps up to size started containers of the last calls' shape, each with its own
// empty slot directory bind-mounted at its own path. A caller reserves a slot (WarmSlot), puts
// the call's private files in it, and Run claims the container whose slot holds them when the
// rest of the call's create request is the one the container was created with.
type warmPool struct {
	size int
	base string
	// refillDelay is warmRefillDelay (tests change it).
	refillDelay time.Duration

	mu       sync.Mutex
	ready    []*warmC
	reserved map[string]*warmC // by slot dir
	priming  int
	shape    *client.ContainerCreateOptions // the last call's, per-call parts removed
	image    string                         // the id of the image the last call ran
	path     string                         // the executable the last call ran
	copy     bool                           // the last call was in copy mode: the slot is a volume
	key      string                         // shape and image: what a claim must match
	failed   bool                           // the last prime failed: no new one until a call's shape changes
	closed   bool
}

// warmC is one warm container: created and started, used for at most one call, then removed.
type warmC struct {
	id, runID, slot, key string
	cli                  string // the CLI path found in it at its create ("" if not looked up)
	untrack              func()
	// volume is the slot's volume in copy mode (warmcopy.go): the engine cannot see the host's
	// slot directory, so the call's files are uploaded into it at the claim. kept are the kept
	// volumes (copycache.go) it mounts.
	volume string
	kept   []string
}

// WithWarm keeps up to n started containers ready for calls (0, the default, keeps none), each
// with an empty slot directory under base (default: the system temp dir) bind-mounted at its
// own path. See WarmSlot.
func WithWarm(n int, base string) Option {
	return func(e *Executor) error {
		if n < 0 || n > 16 {
			return fmt.Errorf("warm %d: want 0 to 16 containers", n)
		}
		if n == 0 {
			e.warm = nil
			return nil
		}
		if base == "" {
			base = os.TempDir()
		}
		if r, err := filepath.EvalSymlinks(base); err == nil {
			base = r
		}
		e.warm = &warmPool{size: n, base: base, refillDelay: warmRefillDelay, reserved: map[string]*warmC{}}
		return nil
	}
}

// WarmSlot reserves a warm container and returns its slot directory: a private (0700) empty
// directory bind-mounted read-write at its own path in that container and in no other. A Spec
// whose per-call Mounts (read-write, Source equal to Target) lie in the slot, and whose other
// settings are those of the calls before, runs in the reserved container (Run) instead of a new
// one; any other Spec runs cold, its Mounts in the slot bind-mounted as usual. release removes
// the slot with everything in it, and the container unless a Run claimed it; it must run once
// the caller is done with the slot's files. An empty dir means there is no warm container ready.
//
// The container's replacement is started when the call ends (Run's end or release) or
// refillDelay after the reservation, whichever comes first: never alongside the start of the
// call that needs the engine now.
func (e *Executor) WarmSlot() (dir string, release func()) {
	p := e.warm
	if p == nil {
		return "", func() {}
	}
	p.mu.Lock()
	if p.closed || len(p.ready) == 0 {
		p.mu.Unlock()
		return "", func() {}
	}
	// The newest of the current shape, else any.
	i := len(p.ready) - 1
	for j := len(p.ready) - 1; j >= 0; j-- {
		if p.ready[j].key == p.key {
			i = j
			break
		}
	}
	w := p.ready[i]
	p.ready = slices.Delete(p.ready, i, i+1)
	p.reserved[w.slot] = w
	p.mu.Unlock()
	later := time.AfterFunc(p.refillDelay, e.refill)
	var once sync.Once
	return w.slot, func() {
		once.Do(func() {
			later.Stop()
			p.mu.Lock()
			held := p.reserved[w.slot] == w
			delete(p.reserved, w.slot)
			p.mu.Unlock()
			e.background.Go(func() {
				if held {
					e.discard(w)
				}
				_ = os.RemoveAll(w.slot)
			})
			e.refill()
		})
	}
}

// claim returns the reserved warm container the Spec can run in, or nil: opts (the call's
// create request, after the egress wiring) must have the container's shape once the Mounts in
// its slot are taken out, and image (the id the call's image reference names now) must be the
// one the container was created from: an image rebuilt under the same name since then makes
// the call start cold. The container is then the call's; nobody else can reserve it.
func (e *Executor) claim(opts client.ContainerCreateOptions, image string) *warmC {
	p := e.warm
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for slot, w := range p.reserved {
		if !slotUsed(opts.HostConfig.Mounts, slot) {
			continue
		}
		_, key, ok := shapeOf(opts, slot)
		if !ok || warmKey(key, image) != w.key {
			return nil
		}
		delete(p.reserved, slot)
		return w
	}
	return nil
}

// learn records the shape of a call (its per-call Mounts taken out) and the id of the image it
// ran as what to keep warm, and refills the pool in the background. A shape with per-call
// Mounts outside any slot (a cold call's) counts the same: the next calls' will be in slots.
func (e *Executor) learn(opts client.ContainerCreateOptions, image, path string, copyMode bool) {
	p := e.warm
	if p == nil {
		return
	}
	shape, key, ok := shapeOf(opts, p.base)
	if !ok || image == "" {
		return
	}
	key = warmKey(key, image)
	p.mu.Lock()
	if key != p.key {
		p.shape, p.image, p.key, p.failed = &shape, image, key, false
	}
	p.path, p.copy = path, copyMode
	p.mu.Unlock()
	e.refill()
}

// refill starts as many warm containers of the current shape as the pool lacks, in the
// background; a failure stops refilling until the shape changes.
func (e *Executor) refill() {
	p := e.warm
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.shape == nil || p.failed {
		return
	}
	// Containers of an older shape give way.
	for len(p.ready) > 0 && len(p.ready)+p.priming >= p.size && p.ready[0].key != p.key {
		old := p.ready[0]
		p.ready = p.ready[1:]
		e.background.Go(func() { e.discard(old); _ = os.RemoveAll(old.slot) })
	}
	for len(p.ready)+p.priming < p.size {
		p.priming++
		shape, image, key, path, copyMode := *p.shape, p.image, p.key, p.path, p.copy
		e.background.Go(func() {
			w, err := e.prime(shape, image, key, path, copyMode)
			p.mu.Lock()
			p.priming--
			switch {
			case errors.Is(err, errKeptBusy):
				// A kept volume it mounts is being refilled: the next call's learn tries again.
			case err != nil:
				p.failed = true
			case p.closed || key != p.key:
				p.mu.Unlock()
				e.discard(w)
				_ = os.RemoveAll(w.slot)
				return
			default:
				p.ready = append(p.ready, w)
			}
			p.mu.Unlock()
		})
	}
}

// prime creates and starts one warm container of shape from the image with that id (not the
// name, which a rebuild may move meanwhile) with a new slot. It is labelled and tracked like a
// run's container (the lifeline and Sweep remove it after a crash).
func (e *Executor) prime(shape client.ContainerCreateOptions, image, key, path string, copyMode bool) (*warmC, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	runID, err := newRunID()
	if err != nil {
		return nil, err
	}
	slot, err := os.MkdirTemp(e.warm.base, warmPrefix+e.instance+"-")
	if err != nil {
		return nil, err
	}
	w := &warmC{runID: runID, slot: slot, key: key, untrack: func() {}}
	if e.track != nil {
		w.untrack = e.track(runID)
	}
	cfg := *shape.Config
	cfg.Labels = maps.Clone(cfg.Labels)
	cfg.Labels[LabelRun], cfg.Labels[labelRole] = runID, "warm"
	waiter := waiterCmd(slot)
	cfg.Entrypoint, cfg.Cmd, cfg.Env, cfg.WorkingDir = waiter, nil, []string{}, ""
	cfg.Image = image
	cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = false, false, false
	// The claim's attach is the only one: its end closes the stdin the CLI inherits.
	cfg.OpenStdin, cfg.StdinOnce = true, true
	host := *shape.HostConfig
	slotMount := mount.Mount{Type: mount.TypeBind, Source: slot, Target: slot,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}
	var created client.ContainerCreateResult
	if copyMode {
		slotMount, err = e.primeCopy(ctx, w, &host, cfg.Labels)
	}
	if err == nil {
		host.Mounts = append(slices.Clone(host.Mounts), slotMount)
		created, err = e.createWarm(ctx, w, &cfg, &host)
	}
	if err == nil {
		w.id = created.ID
		// init would start without the waiter and exit right after: check it is there.
		_, err = e.cli.ContainerStatPath(ctx, w.id, client.ContainerStatPathOptions{Path: waiter[0]})
	}
	if err == nil && fixedPath(path, &host) {
		// Looked up now rather than at the claim: the call's stat is off its time.
		if _, serr := e.cli.ContainerStatPath(ctx, w.id, client.ContainerStatPathOptions{Path: path}); serr == nil {
			w.cli = path
		}
	}
	if err == nil {
		_, err = e.cli.ContainerStart(ctx, w.id, client.ContainerStartOptions{})
	}
	if err != nil {
		e.removeRun(ctx, runID)
		if w.volume != "" {
			e.removeVolume(ctx, w.volume)
		}
		w.untrack()
		_ = os.RemoveAll(slot)
		return nil, err
	}
	return w, nil
}

// discard force-removes a warm container (best effort), then its slot's volume and the kept
// volumes that were retired while it mounted them, and stops tracking it.
func (e *Executor) discard(w *warmC) {
	e.remove(context.Background(), w.id)
	if w.volume != "" {
		e.removeVolume(context.Background(), w.volume)
	}
	if len(w.kept) > 0 {
		e.removeRetired()
	}
	w.untrack()
}

// closeWarm removes the ready and reserved warm containers; called by Close.
func (e *Executor) closeWarm() {
	p := e.warm
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	all := slices.Clone(p.ready)
	p.ready = nil
	for _, w := range p.reserved {
		all = append(all, w)
	}
	clear(p.reserved)
	p.mu.Unlock()
	for _, w := range all {
		e.discard(w)
		_ = os.RemoveAll(w.slot)
	}
}

// removeOwnSlots removes this instance's slot directories (RemoveOwn, after a crash: they held
// the calls' settings copies).
func (e *Executor) removeOwnSlots() error {
	if e.warm == nil {
		return nil
	}
	ms, err := filepath.Glob(filepath.Join(e.warm.base, warmPrefix+globEscape(e.instance)+"-*"))
	var errs []error
	for _, m := range ms {
		errs = append(errs, os.RemoveAll(m))
	}
	return errors.Join(append(errs, err)...)
}

// removeDeadSlots removes the slot directories of instances that dead reports as gone (Sweep).
func (e *Executor) removeDeadSlots(dead func(instance string) bool) error {
	if e.warm == nil {
		return nil
	}
	ms, err := filepath.Glob(filepath.Join(e.warm.base, warmPrefix+"*"))
	var errs []error
	for _, m := range ms {
		inst := strings.TrimPrefix(filepath.Base(m), warmPrefix)
		if i := strings.LastIndexByte(inst, '-'); i > 0 && dead(inst[:i]) {
			errs = append(errs, os.RemoveAll(m))
		}
	}
	return errors.Join(append(errs, err)...)
}

func globEscape(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`).Replace(s)
}

// fixedPath reports whether path lies in the image's own files, where nothing changes it between
// a warm container's create and its claim: not under any mount or tmpfs.
func fixedPath(path string, host *container.HostConfig) bool {
	if path == "" {
		return false
	}
	for _, m := range host.Mounts {
		if path == m.Target || inDir(path, m.Target) {
			return false
		}
	}
	for t := range host.Tmpfs {
		if path == t || inDir(path, t) {
			return false
		}
	}
	return true
}

// slotUsed reports whether a bind mount lies in slot, or (copy mode) a volume is mounted there.
func slotUsed(ms []mount.Mount, slot string) bool {
	for _, m := range ms {
		if m.Type == mount.TypeBind && inDir(m.Source, slot) || m.Type == mount.TypeVolume && inDir(m.Target, slot) {
			return true
		}
	}
	return false
}

// perCall reports whether a mount is a call's own private directory in dir: a read-write bind
// mount at its own path, or in copy mode a writable volume there. A warm container shows it
// through its slot's bind mount (copy mode: its slot's volume, filled at the claim).
func perCall(m mount.Mount, dir string) bool {
	switch m.Type {
	case mount.TypeBind:
		return !m.ReadOnly && m.Source == m.Target && inDir(m.Source, dir)
	case mount.TypeVolume:
		return !m.ReadOnly && inDir(m.Target, dir)
	}
	return false
}

func inDir(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// shapeOf is what a warm container must have been created with to run opts: the create request
// without what goes in at the claim (the process, its environment and working directory, its
// stdin, the run label) and without the per-call Mounts in dir. The key compares shapes; ok is
// false for a request a warm container cannot serve: a volume that is neither per call nor a
// kept, read-only one (copy mode's writable trees, a busy kept volume's stand-in).
func shapeOf(opts client.ContainerCreateOptions, dir string) (client.ContainerCreateOptions, string, bool) {
	cfg := *opts.Config
	cfg.Labels = maps.Clone(cfg.Labels)
	delete(cfg.Labels, LabelRun)
	cfg.Entrypoint, cfg.Cmd, cfg.Env, cfg.WorkingDir = nil, nil, nil, ""
	cfg.AttachStdin, cfg.OpenStdin, cfg.StdinOnce = false, false, false
	host := *opts.HostConfig
	host.Mounts = nil
	for _, m := range opts.HostConfig.Mounts {
		keptRO := m.Type == mount.TypeVolume && m.ReadOnly && strings.HasPrefix(m.Source, keptPrefix)
		if m.Type != mount.TypeBind && !keptRO && !perCall(m, dir) {
			return client.ContainerCreateOptions{}, "", false
		}
		if !perCall(m, dir) {
			host.Mounts = append(host.Mounts, m)
		}
	}
	b, err := json.Marshal(struct {
		C *container.Config
		H *container.HostConfig
	}{&cfg, &host})
	if err != nil {
		return client.ContainerCreateOptions{}, "", false
	}
	return client.ContainerCreateOptions{Config: &cfg, HostConfig: &host}, string(b), true
}

// warmKey is what a warm container must match: the shape's key and the image's id.
func warmKey(shapeKey, image string) string { return image + "\n" + shapeKey }

// WarmReady is how many warm containers are started and not reserved (for tests and doctor).
func (e *Executor) WarmReady() int {
	if e.warm == nil {
		return 0
	}
	e.warm.mu.Lock()
	defer e.warm.mu.Unlock()
	return len(e.warm.ready)
}
