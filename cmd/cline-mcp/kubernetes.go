package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	configfile "github.com/cline-mcp/cline-mcp/config"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/docker"
	"github.com/cline-mcp/cline-mcp/sandbox/kubernetes"
	"github.com/cline-mcp/cline-mcp/sandbox/lifeline"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// k8sConfig is the flags of --isolation kubernetes.
type k8sConfig struct {
	context, kubeconfig, namespace, image, cpu, memory, runtimeClass string
	egressAllow                                                      multiFlag
	egress, egressDNS                                                string
	warm                                                             int
	warmBackend                                                      string
}

var k8sFlagNames = []string{"k8s-context", "k8s-kubeconfig", "k8s-namespace", "k8s-image", "k8s-cpu", "k8s-memory",
	"k8s-runtime-class", "k8s-egress", "k8s-egress-allow", "k8s-egress-dns", "k8s-warm", "k8s-warm-backend"}

func (c *k8sConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.context, "k8s-context", "", "kubeconfig context for --isolation kubernetes (default: the current context of $KUBECONFIG or ~/.kube/config, else the pod's in-cluster account)")
	fs.StringVar(&c.kubeconfig, "k8s-kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&c.namespace, "k8s-namespace", "", "namespace of the run pods (default: the context's, else default)")
	fs.StringVar(&c.image, "k8s-image", "cline-mcp/cline:latest", "image of the run pods: the Cline CLI and cline-mcp-k8s-helper, which the cluster's nodes can pull")
	fs.StringVar(&c.cpu, "k8s-cpu", "2", "CPU request and limit of a run pod")
	fs.StringVar(&c.memory, "k8s-memory", "2Gi", "memory request and limit of a run pod")
	fs.StringVar(&c.runtimeClass, "k8s-runtime-class", "", "RuntimeClass of the run pods (gVisor, Kata), default the cluster's")
	fs.Var(&c.egressAllow, "k8s-egress-allow", "CIDR:port a run pod may reach besides its provider (repeatable; a key-less run's provider is admitted by itself); everything else is denied by the run's NetworkPolicy")
	fs.StringVar(&c.egressDNS, "k8s-egress-dns", kubernetes.DNSKubeDNS, "where the run's NetworkPolicy lets it resolve names (UDP/TCP 53): kube-dns (kube-system's k8s-app=kube-dns pods), a resolver's address or CIDR (e.g. NodeLocal DNSCache's 169.254.20.10), or none")
	fs.IntVar(&c.warm, "k8s-warm", 0, "started pods kept ready for Kubernetes calls per mount layout (0 to 16; each serves one call and is replaced; the first call of a layout starts cold; with the acp protocol also as many spare Cline processes for new conversations)")
	fs.StringVar(&c.warmBackend, "k8s-warm-backend", "pods", "what keeps the --k8s-warm pods: pods (the server's own pool) or agent-sandbox (a SandboxWarmPool of kubernetes-sigs/agent-sandbox, one SandboxClaim per call; it must be installed in the cluster)")
	fs.StringVar(&c.egress, "k8s-egress", "policy", "network of run pods: policy (a NetworkPolicy denies everything but --k8s-egress-allow; only a CNI that enforces NetworkPolicy enforces it) or open (no policy)")
}

func (c *k8sConfig) validate() error {
	if c.egress != "policy" && c.egress != "open" {
		return fmt.Errorf("--k8s-egress must be policy or open, not %q", c.egress)
	}
	if c.egress == "open" && len(c.egressAllow) > 0 {
		return errors.New("--k8s-egress open and --k8s-egress-allow contradict each other")
	}
	if c.warm < 0 || c.warm > kubernetes.MaxWarm {
		return fmt.Errorf("--k8s-warm must be between 0 and %d", kubernetes.MaxWarm)
	}
	if c.warmBackend != "pods" && c.warmBackend != kubernetes.WarmAgentSandbox {
		return fmt.Errorf("--k8s-warm-backend must be pods or %s, not %q", kubernetes.WarmAgentSandbox, c.warmBackend)
	}
	if c.egressDNS == "none" {
		c.egressDNS = ""
	}
	if err := kubernetes.ParseEgressDNS(c.egressDNS); err != nil {
		return err
	}
	return kubernetes.ParseEgressAllow(c.egressAllow)
}

// newKubernetes makes the Kubernetes executor of --isolation kubernetes; opts adjust its
// configuration (the server's lifeline, a dead instance for the watchdog).
func newKubernetes(cfg *config, opts ...func(*kubernetes.Config)) (*kubernetes.Executor, string, error) {
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
	kc := kubernetes.Config{REST: rc, Namespace: ns, Image: cfg.k8s.image, CPU: cfg.k8s.cpu, Memory: cfg.k8s.memory,
		RuntimeClass: cfg.k8s.runtimeClass, UID: uid, GID: gid, Instance: docker.InstanceID(),
		EgressAllow: cfg.k8s.egressAllow, EgressOpen: cfg.k8s.egress == "open", EgressDNS: cfg.k8s.egressDNS, PullPolicy: pullPolicy(), Warm: cfg.k8s.warm}
	if cfg.k8s.warmBackend == kubernetes.WarmAgentSandbox {
		kc.WarmBackend = kubernetes.WarmAgentSandbox
	}
	for _, o := range opts {
		o(&kc)
	}
	e, err := kubernetes.New(kc)
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

// trackPods puts every run pod on the server's lifeline: its watchdog removes them when the
// server dies (removeKubernetes).
func trackPods(life *lifeline.Lifeline) func(*kubernetes.Config) {
	return func(c *kubernetes.Config) {
		c.Track = func(pod string) func() { return life.Track(lifeline.Container, pod) }
	}
}

// removeKubernetes is the watchdog's cleanup of a dead server's pods and their policies, found
// by the instance label every run pod carries.
func removeKubernetes(ctx context.Context, cfg *config, instance string) (int, error) {
	e, _, err := newKubernetes(cfg, func(c *kubernetes.Config) { c.Instance, c.Warm = instance, 0 })
	if err != nil {
		return 0, err
	}
	return e.RemoveOwn(ctx)
}

// sweepKubernetes deletes the pods of dead servers of this host.
func sweepKubernetes(e *kubernetes.Executor) func(context.Context) (int, error) {
	host, _ := os.Hostname()
	return func(ctx context.Context) (int, error) {
		return e.Sweep(ctx, func(id string) bool { return proc.DeadOnHost(id, host) })
	}
}

// dockerOnlyFlags are the flags that mean nothing to a server whose containers are pods, with
// what to use instead ("" when nothing: the pods do it another way); k8sOnlyFlags the reverse.
var (
	dockerOnlyFlags = map[string]string{
		"docker-host": "--k8s-kubeconfig or --k8s-context", "docker-mounts": "", "docker-image": "--k8s-image",
		"docker-network": "--k8s-egress", "docker-egress": "--k8s-egress", "docker-egress-image": "",
		"egress-allow": "--k8s-egress-allow", "docker-memory": "--k8s-memory", "docker-cpus": "--k8s-cpu", "docker-pids": "",
		"docker-warm": "--k8s-warm",
	}
	k8sOnlyFlags = map[string]string{
		"k8s-context": "--docker-host", "k8s-kubeconfig": "--docker-host", "k8s-namespace": "", "k8s-image": "--docker-image",
		"k8s-cpu": "--docker-cpus", "k8s-memory": "--docker-memory", "k8s-runtime-class": "", "k8s-egress": "--docker-egress",
		"k8s-egress-allow": "--egress-allow", "k8s-egress-dns": "", "k8s-warm": "--docker-warm", "k8s-warm-backend": "",
	}
)

// engineFlags refuses a flag given in args that does nothing for the server's container engine
// (a Docker flag with --isolation kubernetes, a --k8s-* flag without it), naming the flag and
// the one to use. A value the configuration file sets is left alone: the file is the machine's,
// and may hold both engines' settings.
func (c *config) engineFlags(args []string) error {
	fromFile := c.fileFlags()
	wrong, engine, other := k8sOnlyFlags, "docker", "--isolation kubernetes (or --retry-isolation kubernetes)"
	if c.container() == sandbox.IsolationKubernetes {
		wrong, engine, other = dockerOnlyFlags, "kubernetes", "--isolation docker"
	}
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		use, bad := wrong[name]
		if v, ok := fromFile[name]; !strings.HasPrefix(a, "-") || !bad || ok && v == value {
			continue
		}
		msg := fmt.Sprintf("--%s does nothing when the containers are %s (it applies to %s)", name, engineWords[engine], other)
		if use != "" {
			msg += "; use " + use
		}
		return errors.New(msg)
	}
	return nil
}

var engineWords = map[string]string{"docker": "Docker containers", "kubernetes": "Kubernetes pods"}

// fileFlags are the flags the configuration file in effect sets, with its values (none when
// there is no file or it cannot be read: applying it has reported that already).
func (c *config) fileFlags() map[string]string {
	path, _ := configfile.Locate(c.configFile, os.Getenv(configfile.EnvFile))
	if path == "" {
		return nil
	}
	f, err := configfile.Load(path)
	if err != nil {
		return nil
	}
	scratch := &config{}
	fs := newFlags(io.Discard)
	scratch.register(fs)
	origins, err := configfile.Apply(fs, f, func() string { return string(c.container()) })
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for name := range origins {
		out[name] = fs.Lookup(name).Value.String()
	}
	return out
}
