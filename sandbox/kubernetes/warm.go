package kubernetes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// LabelWarm marks a pod made ahead of its call (Config.Warm).
const LabelWarm = "cline-mcp.warm"

// MaxWarm bounds Config.Warm.
const MaxWarm = 16

// warmShapes bounds the pod layouts (mount targets, user, sidecar) the pool keeps pods of: a
// call of another layout starts cold.
const warmShapes = 4

// warmRetry is how long a layout whose warm pod could not be made waits before the next try.
const warmRetry = 30 * time.Second

// warmPool keeps started pods ready for calls: Config.Warm per pod layout, each made when the
// first call of its layout comes (that call starts cold). A warm pod is the run's pod without the
// run in it: the same hardened containers, resources and empty volumes, a deny-all
// NetworkPolicy without any egress, and a main container in which cline-mcp-k8s-helper waits
// for the run's command on its stdin. A claimed pod serves one call and is deleted in the
// background; a replacement is made in the background.
type warmPool struct {
	size int
	bg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	shapes map[string]*warmShape
	// making is the context of the pods being made: cancelled by Close, and by makeRoom for a
	// call whose pod does not fit beside them.
	making       context.Context
	cancelMaking context.CancelFunc

	hits, misses atomic.Int64
}

// warmShape is one pod layout: the template of its pods and those ready.
type warmShape struct {
	tmpl     *corev1.Pod
	idle     []*warmPod
	making   int
	failedAt time.Time
}

// warmPod is a started pod of the pool with its policy (nil when egress is open).
type warmPod struct {
	pod     *corev1.Pod
	pol     *networkingv1.NetworkPolicy
	untrack func()
	born    time.Time
}

func newWarmPool(n int) *warmPool {
	ctx, cancel := context.WithCancel(context.Background())
	return &warmPool{size: n, making: ctx, cancelMaking: cancel, shapes: map[string]*warmShape{}}
}

// WarmStats says how many calls a warm pod served and how many started cold while warm pods
// were configured (none ready for their layout).
func (e *Executor) WarmStats() (warm, cold int64) {
	if e.asb != nil {
		return e.asb.hits.Load(), e.asb.misses.Load()
	}
	if e.warm == nil {
		return 0, 0
	}
	return e.warm.hits.Load(), e.warm.misses.Load()
}

// Close deletes the pool's idle pods and waits until every pod the pool made or retired is gone.
// Runs in progress keep their pods; Close is for a server whose calls are over.
func (e *Executor) Close(ctx context.Context) error {
	if e.asb != nil {
		return e.asb.close(ctx, e)
	}
	p := e.warm
	if p == nil {
		return nil
	}
	p.mu.Lock()
	p.closed = true
	var idle []*warmPod
	for _, sh := range p.shapes {
		idle, sh.idle = append(idle, sh.idle...), nil
	}
	p.cancelMaking()
	p.mu.Unlock()
	for _, w := range idle {
		p.retire(e, w, 0)
	}
	done := make(chan struct{})
	go func() { p.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// warmTemplate is the warm pod of spec's layout and the layout's key: the run's pod without what
// is the run's (command, environment, directory, labels, the fill container).
func (e *Executor) warmTemplate(spec sandbox.Spec, cs []*copied) (*corev1.Pod, string, error) {
	s := sandbox.Spec{Path: "/", User: spec.User, Mounts: spec.Mounts, Tmpfs: spec.Tmpfs, Credential: spec.Credential, StopGrace: spec.StopGrace}
	pod, err := e.podFor(s, cs, "", e.cfg.Deadline)
	if err != nil {
		return nil, "", err
	}
	pod.Spec.InitContainers = slices.DeleteFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == fillName })
	cmd := []string{e.cfg.Helper, "warm"}
	if spec.Credential != nil {
		cmd = append(cmd, "--wait", sandbox.ProviderProxyAddr)
	}
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == mainName {
			c.Command, c.Env, c.WorkingDir, c.Stdin, c.StdinOnce = cmd, nil, "", true, true
		}
	}
	pod.Labels[LabelWarm] = "true"
	b, err := json.Marshal(pod.Spec)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	return pod, hex.EncodeToString(sum[:]), nil
}

// claim takes a ready warm pod of spec's layout for one call, or returns nil (the call starts
// cold: never waits for a pod being made). topUp makes the layout's missing pods in the
// background: at once after a claim, after the call's own pod is scheduled when it starts cold
// (a warm pod never takes the place a waiting call needs).
func (p *warmPool) claim(ctx context.Context, e *Executor, spec sandbox.Spec, cs []*copied) (got *warmPod, topUp func()) {
	topUp = func() {}
	tmpl, key, err := e.warmTemplate(spec, cs)
	if err != nil {
		return nil, topUp // the cold path reports it
	}
	need := e.cfg.Deadline / 2
	if d, ok := ctx.Deadline(); ok {
		need = time.Until(d) + time.Minute
	}
	p.mu.Lock()
	sh := p.shapes[key]
	if sh == nil && !p.closed && len(p.shapes) < warmShapes {
		sh = &warmShape{tmpl: tmpl}
		p.shapes[key] = sh
	}
	for sh != nil && got == nil && len(sh.idle) > 0 {
		w := sh.idle[0]
		sh.idle = sh.idle[1:]
		p.mu.Unlock()
		if e.warmUsable(ctx, w, need) {
			got = w
		} else {
			p.retire(e, w, 0)
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
	if sh != nil {
		topUp = func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.refill(e, sh)
		}
	}
	if got == nil {
		p.misses.Add(1)
	} else {
		p.hits.Add(1)
	}
	return got, topUp
}

// makeRoom gives a call's pod that the cluster cannot place the room of the pool: the idle pods
// are deleted and those being made are given up. The pool fills again after that pod is placed.
func (p *warmPool) makeRoom(e *Executor) {
	p.mu.Lock()
	var idle []*warmPod
	for _, sh := range p.shapes {
		idle, sh.idle = append(idle, sh.idle...), nil
	}
	p.cancelMaking()
	if !p.closed {
		p.making, p.cancelMaking = context.WithCancel(context.Background())
	}
	p.mu.Unlock()
	for _, w := range idle {
		p.retire(e, w, 0)
	}
}

// coldPlaced waits until the cold pod name is placed on a node; while the cluster has no room for
// it (Insufficient cpu, memory, pods), the pool makes room.
func (p *warmPool) coldPlaced(ctx context.Context, e *Executor, name string) error {
	return e.waitPlaced(ctx, name, func() { p.makeRoom(e); e.roomNeeded() })
}

// lacksRoom says the scheduler found no node with the resources pod requests.
func lacksRoom(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse &&
			c.Reason == corev1.PodReasonUnschedulable && strings.Contains(c.Message, "Insufficient") {
			return true
		}
	}
	return false
}

// warmUsable says w is still a started, undeleted pod whose deadline outlasts a run of need.
func (e *Executor) warmUsable(ctx context.Context, w *warmPod, need time.Duration) bool {
	if time.Since(w.born)+need > e.cfg.Deadline {
		return false
	}
	p, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Get(ctx, w.pod.Name, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == mainName && s.State.Running != nil && s.RestartCount == 0 {
			w.pod = p
			return true
		}
	}
	return false
}

// refill starts making the pods sh lacks (p.mu held).
func (p *warmPool) refill(e *Executor, sh *warmShape) {
	if p.closed || time.Since(sh.failedAt) < warmRetry {
		return
	}
	for ; len(sh.idle)+sh.making < p.size; sh.making++ {
		p.bg.Add(1)
		ctx := p.making
		go func() {
			defer p.bg.Done()
			w := e.makeWarm(ctx, sh.tmpl)
			p.mu.Lock()
			defer p.mu.Unlock()
			sh.making--
			switch {
			case w == nil && ctx.Err() == nil:
				sh.failedAt = time.Now()
			case w == nil:
			case p.closed || ctx.Err() != nil:
				p.retire(e, w, 0)
			default:
				sh.idle = append(sh.idle, w)
			}
		}()
	}
}

// makeWarm creates a pod of tmpl with its deny-all policy and waits until its main container
// runs; nil when it cannot (whatever it made is deleted).
func (e *Executor) makeWarm(ctx context.Context, tmpl *corev1.Pod) *warmPod {
	pod, id := tmpl.DeepCopy(), randomID()
	pod.Name, pod.Labels[LabelRun] = "cline-mcp-"+id, id
	w := &warmPod{untrack: func() {}, born: time.Now()}
	if e.cfg.Track != nil {
		w.untrack = e.cfg.Track(pod.Name)
	}
	fail := func() *warmPod {
		e.remove(ctx, pod.Name, 0)
		w.untrack()
		return nil
	}
	mctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var err error
	if w.pod, err = e.cs.CoreV1().Pods(e.cfg.Namespace).Create(mctx, pod, metav1.CreateOptions{}); err != nil {
		return fail()
	}
	if !e.cfg.EgressOpen {
		if w.pol, err = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Create(mctx, denyAll(w.pod, nil, ""), metav1.CreateOptions{}); err != nil {
			return fail()
		}
	}
	if _, err := e.waitFor(mctx, pod.Name, func(p *corev1.Pod) bool { return started(p, mainName) }); err != nil {
		return fail()
	}
	return w
}

// retire deletes w's pod (then its policy) in the background, off the call's path.
func (p *warmPool) retire(e *Executor, w *warmPod, grace time.Duration) {
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		e.remove(context.Background(), w.pod.Name, grace)
		w.untrack()
	}()
}

// warmHeader is the first line a warm pod's main container reads on its stdin
// (cline-mcp-k8s-helper warm): what a cold pod's container spec says.
type warmHeader struct {
	Args []string `json:"args"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	End  string   `json:"end"` // the nonce of the end frame (demuxEnd)
}

// runWarm runs spec in the claimed pod w: the run's labels and its policy's egress go on the pod
// and the policy, the credential to the sidecar, the volumes are filled through the keeper
// (pods/exec of the helper's untar), and the command, environment and directory go to the main
// container's stdin ahead of the run's own stdin. The pod serves this call only.
func (e *Executor) runWarm(ctx context.Context, spec sandbox.Spec, copies []*copied, allow []string, up upstream, w *warmPod) (sandbox.Exit, error) {
	start := time.Now()
	defer e.warm.retire(e, w, time.Second)
	if len(spec.Labels) > 0 {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": spec.Labels}})
		p, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Patch(ctx, w.pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return sandbox.Exit{}, e.apiError("patch pods", err)
		}
		w.pod = p
	}
	pol := w.pol
	if pol != nil {
		np := pol.DeepCopy()
		np.Spec.Egress = append(dnsRule(e.cfg.EgressDNS), allowRules(allow)...)
		var err error
		if pol, err = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Update(ctx, np, metav1.UpdateOptions{}); err != nil {
			return sandbox.Exit{}, e.apiError("update networkpolicies", err)
		}
	}
	return e.driveWarm(ctx, w.pod, pol, spec, copies, up, start)
}

// driveWarm runs spec in a started warm pod: the command, environment and directory go to the
// main container's stdin (a warmHeader line ahead of the run's own stdin), the files through the
// keeper.
func (e *Executor) driveWarm(ctx context.Context, pod *corev1.Pod, pol *networkingv1.NetworkPolicy, spec sandbox.Spec, copies []*copied, up upstream, start time.Time) (sandbox.Exit, error) {
	end := randomID() + randomID()
	hdr, err := json.Marshal(warmHeader{Args: append([]string{spec.Path}, spec.Args...), Env: spec.Env, Dir: spec.Dir, End: end})
	if err != nil {
		return sandbox.Exit{}, err
	}
	in := spec.Stdin
	if in == nil {
		in = strings.NewReader("")
	}
	spec.Stdin = io.MultiReader(bytes.NewReader(append(hdr, '\n')), in)
	return e.drive(ctx, pod, pol, spec, copies, up, start, e.fillKeeper, end)
}

// fillKeeper fills a warm pod's volumes: the helper's untar exec'd into the keeper, which mounts
// them all as the fill container of a cold pod does.
func (e *Executor) fillKeeper(ctx context.Context, pod string, cs []*copied) error {
	if len(cs) == 0 {
		return nil
	}
	cmd := []string{e.cfg.Helper, "untar"}
	for i, c := range cs {
		dest := c.m.Target
		if c.file {
			dest = fileStage(i)
		}
		cmd = append(cmd, dest)
	}
	return e.sendMounts(ctx, pod, "exec", &corev1.PodExecOptions{Container: keeperName, Command: cmd, Stdin: true, Stderr: true}, cs)
}
