package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// WarmAgentSandbox is the Config.WarmBackend that keeps the warm pods with kubernetes-sigs'
// agent-sandbox controller (a SandboxWarmPool of a SandboxTemplate, one SandboxClaim per call)
// instead of the executor's own pool.
const WarmAgentSandbox = "agent-sandbox"

// LabelLayout marks the pods of one agent-sandbox warm pool: the pool's deny-all policy selects
// them by it.
const LabelLayout = "cline-mcp.layout"

// The agent-sandbox resources (v1beta1, as agent-sandbox v1.0.1 serves them).
var (
	asbTemplates = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	asbPools     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
	asbClaims    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	asbSandboxes = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}
)

// asbPodName is the Sandbox's annotation naming a pod it adopted (else the pod is named as it).
const asbPodName = "agents.x-k8s.io/pod-name"

// asbClaimWait bounds how long a call waits for its claim to be bound to a ready warm sandbox
// before it starts cold: the controller binds a ready one in a few watch round trips.
const asbClaimWait = 2 * time.Second

// asbHint is the LaunchError hint when the cluster does not serve agent-sandbox.
const asbHint = "install agent-sandbox v1.0.1 (its CRDs and its controller with --extensions) in the cluster, or run without --k8s-warm-backend agent-sandbox (docs/kubernetes.md)"

// asbPool keeps the warm pods of Config.Warm with agent-sandbox: per pod layout a
// SandboxTemplate made from the warm pod (warmTemplate: nothing of a run in it), a deny-all
// NetworkPolicy over its pods (the template leaves the policy to us: Unmanaged) and a
// SandboxWarmPool of Config.Warm; a call claims one (SandboxClaim, no env, no volumes: else the
// controller starts it cold) and the run goes in as into the executor's own warm pods.
type asbPool struct {
	size int
	dyn  dynamic.Interface
	bg   sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	layouts map[string]string // layout key -> the name of its template, pool and policy
	waiting int               // cold pods waiting for room (coldPlaced): the pools are at 0 meanwhile

	hits, misses atomic.Int64
	// roomMade counts the cold pods for which the pools were scaled to 0 (coldPlaced).
	roomMade atomic.Int64
	// bound is how long the last call that got a warm pod took to get it (nanoseconds): the
	// claim's creation, its binding and the pod's check.
	bound atomic.Int64
}

// asbClaim is a bound claim: its sandbox and the adopted pod.
type asbClaim struct {
	name, sandbox string
	pod           *corev1.Pod
}

func newASBPool(n int, dyn dynamic.Interface) *asbPool {
	return &asbPool{size: n, dyn: dyn, layouts: map[string]string{}}
}

// asbError is err of an agent-sandbox request: a LaunchError with a hint when the cluster does
// not serve the resource (agent-sandbox not installed, or its CRDs being deleted) or refuses it.
func (e *Executor) asbError(what string, err error) error {
	var missing *meta.NoKindMatchError
	if apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource") || errors.As(err, &missing) {
		return &sandbox.LaunchError{Op: what, Err: fmt.Errorf("the cluster does not serve agent-sandbox: %w", err), Hint: asbHint}
	}
	// The API server's refusal while agent-sandbox's CRDs are being deleted: uninstalled, not a
	// missing permission.
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "custom resource definition is terminating") {
		return &sandbox.LaunchError{Op: what, Err: fmt.Errorf("agent-sandbox is being removed from the cluster: %w", err), Hint: asbHint}
	}
	if apierrors.IsForbidden(err) {
		return &sandbox.LaunchError{Op: what, Err: err, Hint: fmt.Sprintf("the server's Kubernetes account may not %s in namespace %s: see the agent-sandbox RBAC of docs/kubernetes.md", what, e.cfg.Namespace)}
	}
	return fmt.Errorf("kubernetes %s: %w", what, err)
}

// layout returns the name of the layout's pool, making its policy, template and pool on the
// layout's first call (that call starts cold); "" when the pool keeps no more layouts.
func (a *asbPool) layout(ctx context.Context, e *Executor, key string, tmpl *corev1.Pod) (name string, made bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, ok := a.layouts[key]; ok || a.closed || len(a.layouts) >= warmShapes {
		return n, false, nil
	}
	name = "cline-mcp-" + instanceLabel(e.cfg.Instance)[:6] + "-" + key[:8]
	if err := e.makeASBLayout(ctx, name, key, tmpl, a.size); err != nil {
		return "", false, err
	}
	a.layouts[key] = name
	return name, true, nil
}

// makeASBLayout creates the deny-all policy over the layout's pods, then the template and the pool
// (a pod never runs without the policy over it). Objects left by an earlier try are reused.
func (e *Executor) makeASBLayout(ctx context.Context, name, key string, tmpl *corev1.Pod, size int) error {
	labels := map[string]string{LabelInstance: instanceLabel(e.cfg.Instance), LabelWarm: WarmAgentSandbox, LabelLayout: key[:16]}
	annos := map[string]string{AnnoInstance: e.cfg.Instance}
	pol := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annos},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelLayout: key[:16], LabelInstance: labels[LabelInstance]}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	if _, err := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Create(ctx, pol, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return e.apiError("create networkpolicies", err)
	}
	ok := false
	defer func() {
		if !ok { // a layout that is not made has no policy either
			_ = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
		}
	}()
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl.Spec)
	if err != nil {
		return err
	}
	meta := map[string]any{"labels": toAny(labels), "annotations": toAny(annos)}
	template := asbObject("SandboxTemplate", name, labels, annos, map[string]any{
		"podTemplate":             map[string]any{"metadata": meta, "spec": spec},
		"service":                 false,
		"networkPolicyManagement": "Unmanaged",
		"envVarsInjectionPolicy":  "Disallowed",
	})
	if _, err := e.asb.dyn.Resource(asbTemplates).Namespace(e.cfg.Namespace).Create(ctx, template, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return e.asbError("create sandboxtemplates", err)
	}
	pool := asbObject("SandboxWarmPool", name, labels, annos, map[string]any{
		"replicas": int64(size), "sandboxTemplateRef": map[string]any{"name": name},
	})
	if _, err := e.asb.dyn.Resource(asbPools).Namespace(e.cfg.Namespace).Create(ctx, pool, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		_ = e.asb.dyn.Resource(asbTemplates).Namespace(e.cfg.Namespace).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
		return e.asbError("create sandboxwarmpools", err)
	}
	ok = true
	return nil
}

func asbObject(kind, name string, labels, annos map[string]string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": kind,
		"metadata": map[string]any{"name": name, "labels": toAny(labels), "annotations": toAny(annos)},
		"spec":     spec,
	}}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// claim binds a SandboxClaim to a ready warm sandbox of spec's layout for one call, or returns
// nil (the call starts cold; a claim that did not bind within asbClaimWait is deleted). It fails
// only when the cluster does not serve agent-sandbox.
func (a *asbPool) claim(ctx context.Context, e *Executor, spec sandbox.Spec, cs []*copied) (*asbClaim, error) {
	tmpl, key, err := e.warmTemplate(spec, cs)
	if err != nil {
		return nil, nil // the cold path reports it
	}
	name, made, err := a.layout(ctx, e, key, tmpl)
	if err != nil || name == "" || made {
		a.misses.Add(1)
		return nil, err
	}
	start := time.Now()
	c := a.bind(ctx, e, name, key)
	if c == nil {
		a.misses.Add(1)
	} else {
		a.hits.Add(1)
		a.bound.Store(int64(time.Since(start)))
	}
	return c, nil
}

// bind creates a claim on pool name and waits for its ready sandbox and the pod of the layout
// key; nil when there is none in time (the claim is released).
func (a *asbPool) bind(ctx context.Context, e *Executor, name, key string) *asbClaim {
	claims := a.dyn.Resource(asbClaims).Namespace(e.cfg.Namespace)
	obj := asbObject("SandboxClaim", "", map[string]string{LabelInstance: instanceLabel(e.cfg.Instance)}, map[string]string{AnnoInstance: e.cfg.Instance},
		map[string]any{"warmPoolRef": map[string]any{"name": name}})
	meta := obj.Object["metadata"].(map[string]any)
	delete(meta, "name")
	meta["generateName"] = name + "-"
	got, err := claims.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil
	}
	c := &asbClaim{name: got.GetName()}
	wctx, cancel := context.WithTimeout(ctx, asbClaimWait)
	defer cancel()
	if c.sandbox = a.waitBound(wctx, e, got); c.sandbox != "" {
		if c.pod = e.asbPod(wctx, c.sandbox, key); c.pod != nil {
			return c
		}
	}
	a.release(e, c, 0)
	return nil
}

// waitBound watches the claim until it is Ready with a sandbox; the sandbox's name, or "".
func (a *asbPool) waitBound(ctx context.Context, e *Executor, claim *unstructured.Unstructured) string {
	claims := a.dyn.Resource(asbClaims).Namespace(e.cfg.Namespace)
	if n := boundSandbox(claim); n != "" {
		return n
	}
	w, err := claims.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", claim.GetName()).String(),
		ResourceVersion: claim.GetResourceVersion()})
	if err != nil {
		return ""
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ""
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error || ev.Type == watch.Deleted {
				return ""
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				if n := boundSandbox(u); n != "" {
					return n
				}
			}
		}
	}
}

// boundSandbox is the claim's sandbox once the claim is Ready, else "".
func boundSandbox(u *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(u.Object, "status", "sandbox", "name")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			return name
		}
	}
	return ""
}

// asbPod is the started pod of the claimed sandbox, checked to be one of the layout's (the
// sandbox's pod, made from our template, main container running and never restarted, not being
// deleted, its deadline ahead); nil otherwise.
func (e *Executor) asbPod(ctx context.Context, sandboxName, key string) *corev1.Pod {
	sb, err := e.asb.dyn.Resource(asbSandboxes).Namespace(e.cfg.Namespace).Get(ctx, sandboxName, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	name := sb.GetAnnotations()[asbPodName]
	if name == "" {
		name = sandboxName
	}
	p, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil || p.Labels[LabelLayout] != key[:16] || p.Labels[LabelInstance] != instanceLabel(e.cfg.Instance) {
		return nil
	}
	if owner := metav1.GetControllerOf(p); owner == nil || owner.Kind != "Sandbox" || owner.UID != sb.GetUID() {
		return nil
	}
	need := e.cfg.Deadline / 2
	if d, ok := ctx.Deadline(); ok {
		need = time.Until(d) + time.Minute
	}
	if time.Since(p.CreationTimestamp.Time)+need > e.cfg.Deadline {
		return nil
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == mainName && s.State.Running != nil && s.RestartCount == 0 {
			return p
		}
	}
	return nil
}

// release deletes a claim, its sandbox and pod (grace), then the run's policy, in the
// background, off the call's path. The claim goes first: while it exists the controller would
// make its sandbox a new pod.
func (a *asbPool) release(e *Executor, c *asbClaim, grace time.Duration) {
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), grace+cleanupTimeout)
		defer cancel()
		_ = a.dyn.Resource(asbClaims).Namespace(e.cfg.Namespace).Delete(ctx, c.name, metav1.DeleteOptions{})
		if c.sandbox != "" {
			_ = a.dyn.Resource(asbSandboxes).Namespace(e.cfg.Namespace).Delete(ctx, c.sandbox, metav1.DeleteOptions{})
		}
		if c.pod != nil {
			e.remove(ctx, c.pod.Name, grace)
		}
	}()
}

// runASB runs spec in the claimed pod as runWarm does in one of the executor's own: the run's
// labels go on the pod, a policy of the run's own (the cold call's: deny-all but the run's
// egress) selects it by its run label, the credential goes to the sidecar, the volumes are
// filled through the keeper, the command, environment and directory go to the main container's
// stdin. The claim is released afterwards.
func (e *Executor) runASB(ctx context.Context, spec sandbox.Spec, copies []*copied, allow []string, up upstream, c *asbClaim) (sandbox.Exit, error) {
	start := time.Now()
	defer e.asb.release(e, c, time.Second)
	id := randomID()
	pod := c.pod.DeepCopy()
	pod.Labels[LabelRun] = id
	var pol *networkingv1.NetworkPolicy
	if !e.cfg.EgressOpen {
		var err error
		if pol, err = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Create(ctx, denyAll(pod, allow, e.cfg.EgressDNS), metav1.CreateOptions{}); err != nil {
			return sandbox.Exit{}, e.apiError("create networkpolicies", err)
		}
	}
	labels := map[string]any{LabelRun: id}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	p, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return sandbox.Exit{}, e.apiError("patch pods", err)
	}
	return e.driveWarm(ctx, p, pol, spec, copies, up, start)
}
