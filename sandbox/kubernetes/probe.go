package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// probePort is where the probe's target pod listens.
const probePort = "8080"

// probeLife bounds every probe pod (activeDeadlineSeconds, and the target's own timer): a probe
// whose caller died ends by itself, and the next server's sweeper deletes it.
const probeLife = 120 * time.Second

// probeContainer is the container name of the probe pods.
const probeContainer = "probe"

// PolicyProbe is what ProbePolicy saw.
type PolicyProbe struct {
	Enforced bool          // the pod under the runs' NetworkPolicy could not connect
	Open     string        // what the pod without a policy saw ("connected")
	Closed   string        // what the pod under the policy saw ("blocked: ..." when enforced)
	Took     time.Duration // the whole probe, pods included
}

// ProbePolicy finds out whether the cluster enforces the NetworkPolicy runs get, by trying it:
// a target pod listens on TCP; two pods of the run image dial it at the same time, one under
// the deny-all policy a run gets (made the way a run makes it: right after its pod) and one
// without. The open pod must connect (otherwise the test says nothing: an error); the closed
// one connecting means the CNI ignores the policy. All three pods (and the policy) are deleted
// before it returns; they carry this executor's instance, so a killed caller's are swept.
func (e *Executor) ProbePolicy(ctx context.Context) (PolicyProbe, error) {
	start := time.Now()
	id := randomID()
	pods := e.cs.CoreV1().Pods(e.cfg.Namespace)
	var made []string
	defer func() {
		for _, name := range made {
			e.remove(ctx, name, 0)
		}
	}()
	create := func(role string, cmd ...string) (*corev1.Pod, error) {
		p, err := pods.Create(ctx, e.probePod(id, role, cmd), metav1.CreateOptions{})
		if err != nil {
			return nil, e.apiError("create pods", err)
		}
		made = append(made, p.Name)
		return p, nil
	}
	target, err := create("target", e.cfg.Helper, "serve", ":"+probePort, fmt.Sprint(int(probeLife.Seconds())))
	if err != nil {
		return PolicyProbe{}, err
	}
	target, err = e.waitFor(ctx, target.Name, func(p *corev1.Pod) bool { return started(p, probeContainer) && p.Status.PodIP != "" })
	if err != nil {
		return PolicyProbe{}, fmt.Errorf("the target pod did not start: %w", err)
	}
	if terminated(target, probeContainer) != nil {
		return PolicyProbe{}, fmt.Errorf("the target pod ended at once: %s", terminated(target, probeContainer).Message)
	}
	addr := net.JoinHostPort(target.Status.PodIP, probePort)
	open, err := create("open", e.cfg.Helper, "dial", addr)
	if err != nil {
		return PolicyProbe{}, err
	}
	closed, err := create("closed", e.cfg.Helper, "dial", addr)
	if err != nil {
		return PolicyProbe{}, err
	}
	if _, err := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Create(ctx, denyAll(closed, nil, e.cfg.EgressDNS), metav1.CreateOptions{}); err != nil {
		return PolicyProbe{}, e.apiError("create networkpolicies", err)
	}
	res := PolicyProbe{}
	for _, p := range []struct {
		name string
		msg  *string
	}{{open.Name, &res.Open}, {closed.Name, &res.Closed}} {
		end, err := e.waitFor(ctx, p.name, func(p *corev1.Pod) bool { return terminated(p, probeContainer) != nil })
		if err != nil {
			return PolicyProbe{}, fmt.Errorf("probe pod %s: %w", p.name, err)
		}
		t := terminated(end, probeContainer)
		*p.msg = strings.TrimSpace(t.Message)
		if t.ExitCode != 0 && !strings.HasPrefix(*p.msg, "blocked") {
			return PolicyProbe{}, fmt.Errorf("probe pod %s ended with status %d (%s %s): is cline-mcp-k8s-helper in %s recent enough?", p.name, t.ExitCode, t.Reason, *p.msg, e.cfg.Image)
		}
	}
	res.Took = time.Since(start)
	if res.Open != "connected" {
		return res, errors.New("a pod without a NetworkPolicy could not reach another pod either (" + res.Open + "): the probe cannot tell")
	}
	res.Enforced = res.Closed != "connected"
	return res, nil
}

// probePod is one pod of the probe: the run image's helper, hardened like a run, small.
func (e *Executor) probePod(id, role string, cmd []string) *corev1.Pod {
	c := e.container(probeContainer, cmd, nil)
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
	no := false
	grace, active := int64(1), int64(probeLife.Seconds())
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cline-mcp-probe-" + id + "-" + role,
			Labels:      map[string]string{LabelRun: "probe-" + id + "-" + role, LabelInstance: instanceLabel(e.cfg.Instance)},
			Annotations: map[string]string{AnnoInstance: e.cfg.Instance}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c},
			AutomountServiceAccountToken: &no, EnableServiceLinks: &no, TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds: &active, SecurityContext: podSecurity(e.cfg.UID, e.cfg.GID), RuntimeClassName: runtimeClass(e.cfg.RuntimeClass)},
	}
}

func runtimeClass(name string) *string {
	if name == "" {
		return nil
	}
	return &name
}
