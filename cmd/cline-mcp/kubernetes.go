package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/docker"
	"github.com/cline-mcp/cline-mcp/sandbox/kubernetes"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// k8sConfig is the flags of --isolation kubernetes.
type k8sConfig struct {
	context, kubeconfig, namespace, image, cpu, memory, runtimeClass string
	egressAllow                                                      multiFlag
	egress, egressDNS                                                string
}

var k8sFlagNames = []string{"k8s-context", "k8s-kubeconfig", "k8s-namespace", "k8s-image", "k8s-cpu", "k8s-memory",
	"k8s-runtime-class", "k8s-egress", "k8s-egress-allow", "k8s-egress-dns"}

func (c *k8sConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.context, "k8s-context", "", "kubeconfig context for --isolation kubernetes (default: the current context of $KUBECONFIG or ~/.kube/config, else the pod's in-cluster account)")
	fs.StringVar(&c.kubeconfig, "k8s-kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&c.namespace, "k8s-namespace", "", "namespace of the run pods (default: the context's, else default)")
	fs.StringVar(&c.image, "k8s-image", "cline-mcp/cline:latest", "image of the run pods: the Cline CLI and cline-mcp-k8s-helper, which the cluster's nodes can pull")
	fs.StringVar(&c.cpu, "k8s-cpu", "2", "CPU request and limit of a run pod")
	fs.StringVar(&c.memory, "k8s-memory", "2Gi", "memory request and limit of a run pod")
	fs.StringVar(&c.runtimeClass, "k8s-runtime-class", "", "RuntimeClass of the run pods (gVisor, Kata), default the cluster's")
	fs.Var(&c.egressAllow, "k8s-egress-allow", "CIDR:port a run pod may reach, e.g. the provider's address (repeatable); everything else is denied by the run's NetworkPolicy")
	fs.StringVar(&c.egressDNS, "k8s-egress-dns", kubernetes.DNSKubeDNS, "where the run's NetworkPolicy lets it resolve names (UDP/TCP 53): kube-dns (kube-system's k8s-app=kube-dns pods), a resolver's address or CIDR (e.g. NodeLocal DNSCache's 169.254.20.10), or none")
	fs.StringVar(&c.egress, "k8s-egress", "policy", "network of run pods: policy (a NetworkPolicy denies everything but --k8s-egress-allow; only a CNI that enforces NetworkPolicy enforces it) or open (no policy)")
}

func (c *k8sConfig) validate() error {
	if c.egress != "policy" && c.egress != "open" {
		return fmt.Errorf("--k8s-egress must be policy or open, not %q", c.egress)
	}
	if c.egress == "open" && len(c.egressAllow) > 0 {
		return errors.New("--k8s-egress open and --k8s-egress-allow contradict each other")
	}
	if c.egressDNS == "none" {
		c.egressDNS = ""
	}
	if err := kubernetes.ParseEgressDNS(c.egressDNS); err != nil {
		return err
	}
	return kubernetes.ParseEgressAllow(c.egressAllow)
}

// newKubernetes makes the Kubernetes executor of --isolation kubernetes.
func newKubernetes(cfg *config) (*kubernetes.Executor, string, error) {
	rc, ns, from, err := kubernetes.Discover(cfg.k8s.kubeconfig, cfg.k8s.context)
	if err != nil {
		return nil, "", err
	}
	if cfg.k8s.namespace != "" {
		ns = cfg.k8s.namespace
	}
	if ns == "" {
		ns = "default"
	}
	uid, gid := callerIDs()
	e, err := kubernetes.New(kubernetes.Config{REST: rc, Namespace: ns, Image: cfg.k8s.image, CPU: cfg.k8s.cpu, Memory: cfg.k8s.memory,
		RuntimeClass: cfg.k8s.runtimeClass, UID: uid, GID: gid, Instance: docker.InstanceID(),
		EgressAllow: cfg.k8s.egressAllow, EgressOpen: cfg.k8s.egress == "open", EgressDNS: cfg.k8s.egressDNS, PullPolicy: pullPolicy()})
	if err != nil {
		return nil, "", err
	}
	return e, fmt.Sprintf("namespace %s, %s", ns, from), nil
}

// callerIDs are the ids the pods run as: the caller's, as rootful Docker (1000 when the server
// runs as root or on Windows: a pod never needs root).
func callerIDs() (int64, int64) {
	uid, gid := int64(os.Getuid()), int64(os.Getgid())
	if uid <= 0 {
		return 1000, 1000
	}
	return uid, gid
}

// pullPolicy is Never for images imported on the node (CLINE_MCP_K8S_PULL=Never, the tests'),
// else IfNotPresent.
func pullPolicy() string {
	if os.Getenv("CLINE_MCP_K8S_PULL") == "Never" {
		return "Never"
	}
	return "IfNotPresent"
}

// sweepKubernetes deletes the pods of dead servers of this host.
func sweepKubernetes(e *kubernetes.Executor) func(context.Context) (int, error) {
	host, _ := os.Hostname()
	return func(ctx context.Context) (int, error) {
		return e.Sweep(ctx, func(id string) bool { return proc.DeadOnHost(id, host) })
	}
}

// k8sChecks are doctor's lines for --isolation kubernetes: the cluster found and its version,
// the permissions runs need in the namespace, and what the egress policy can promise.
func k8sChecks(ctx context.Context, cfg *config) []check {
	e, where, err := newKubernetes(cfg)
	if err != nil {
		return []check{{name: "kubernetes", detail: err.Error(), fix: "pass --k8s-kubeconfig/--k8s-context, or run the server in a pod with a service account"}}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	version, missing, err := e.Check(cctx)
	cancel()
	if err != nil {
		return []check{{name: "kubernetes", detail: where + ": " + err.Error(), fix: "check the kubeconfig's server address and credentials"}}
	}
	out := []check{{name: "kubernetes", ok: true, detail: fmt.Sprintf("%s, server %s, image %s", where, version, cfg.k8s.image)}}
	if len(missing) > 0 {
		out = append(out, check{name: "k8s permissions", detail: "missing in namespace " + e.Namespace() + ": " + strings.Join(missing, ", "),
			fix: "apply the Role and RoleBinding of docs/kubernetes.md to the server's account"})
		return append(out, check{name: "k8s egress", optional: true, detail: "not probed: the permissions above are missing"})
	}
	out = append(out, check{name: "k8s permissions", ok: true, detail: "pods, pods/attach, pods/exec, pods/log and networkpolicies in namespace " + e.Namespace()})
	return append(out, egressProbe(ctx, e, cfg))
}

// egressProbe is doctor's line on the runs' NetworkPolicy: whether the cluster enforces it, by
// ProbePolicy (three short pods of the image in the namespace, about 6 s).
func egressProbe(ctx context.Context, e *kubernetes.Executor, cfg *config) check {
	c := check{name: "k8s egress", optional: true,
		fix: "use a CNI that enforces NetworkPolicy (Calico, Cilium, kube-router, ...), or close the namespace's network some other way"}
	if cfg.k8s.egress == "open" {
		c.ok, c.detail = true, "no NetworkPolicy (--k8s-egress open): run pods reach whatever the pod network reaches"
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := e.ProbePolicy(ctx)
	switch {
	case err != nil:
		c.detail = "cannot tell whether the cluster enforces NetworkPolicy: " + err.Error()
	case res.Enforced:
		c.ok = true
		c.detail = fmt.Sprintf("NetworkPolicy enforced: a probe pod under a run's deny-all policy could not reach a pod that one without it reached (%s; %.1fs)", res.Closed, res.Took.Seconds())
	default:
		c.detail = fmt.Sprintf("NetworkPolicy NOT enforced: a probe pod under a run's deny-all policy reached another pod (%.1fs); this cluster's CNI ignores NetworkPolicy, so run pods reach whatever the pod network reaches", res.Took.Seconds())
	}
	return c
}
