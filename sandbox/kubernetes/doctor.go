package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// DoctorChecks are doctor's lines for --isolation kubernetes on this executor (where says which
// cluster and how it was found): the cluster and its version, the permissions runs need in the
// namespace, and what the egress policy can promise.
func (e *Executor) DoctorChecks(ctx context.Context, where string) []sandbox.Check {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	version, missing, err := e.Check(cctx)
	cancel()
	if err != nil {
		return []sandbox.Check{{Name: "kubernetes", Detail: where + ": " + err.Error(), Fix: "check the kubeconfig's server address and credentials"}}
	}
	out := []sandbox.Check{{Name: "kubernetes", OK: true, Detail: fmt.Sprintf("%s, server %s, image %s", where, version, e.cfg.Image)}}
	if len(missing) > 0 {
		out = append(out, sandbox.Check{Name: "k8s permissions", Detail: "missing in namespace " + e.Namespace() + ": " + strings.Join(missing, ", "),
			Fix: "apply the Role and RoleBinding of docs/kubernetes.md to the server's account"})
		return append(out, sandbox.Check{Name: "k8s egress", Optional: true, Detail: "not probed: the permissions above are missing"})
	}
	out = append(out, sandbox.Check{Name: "k8s permissions", OK: true, Detail: "pods, pods/attach, pods/exec, pods/log and networkpolicies in namespace " + e.Namespace()})
	return append(out, e.egressCheck(ctx))
}

// egressCheck is doctor's line on the runs' NetworkPolicy: whether the cluster enforces it, by
// ProbePolicy (three short pods of the image in the namespace, about 6 s).
func (e *Executor) egressCheck(ctx context.Context) sandbox.Check {
	c := sandbox.Check{Name: "k8s egress", Optional: true,
		Fix: "use a CNI that enforces NetworkPolicy (Calico, Cilium, kube-router, ...), or close the namespace's network some other way"}
	if e.cfg.EgressOpen {
		c.OK, c.Detail = true, "no NetworkPolicy (--k8s-egress open): run pods reach whatever the pod network reaches"
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := e.ProbePolicy(ctx)
	switch {
	case err != nil:
		c.Detail = "cannot tell whether the cluster enforces NetworkPolicy: " + err.Error()
	case res.Enforced:
		c.OK = true
		c.Detail = fmt.Sprintf("NetworkPolicy enforced: a probe pod under a run's deny-all policy could not reach a pod that one without it reached (%s; %.1fs)", res.Closed, res.Took.Seconds())
	default:
		c.Detail = fmt.Sprintf("NetworkPolicy NOT enforced: a probe pod under a run's deny-all policy reached another pod (%.1fs); this cluster's CNI ignores NetworkPolicy, so run pods reach whatever the pod network reaches", res.Took.Seconds())
	}
	return c
}
