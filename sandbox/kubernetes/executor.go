// Package kubernetes is the Kubernetes executor (docs/kubernetes.md): one pod per run, always in
// copy mode. Each directory Mount becomes an emptyDir at its Target, filled by an init container
// (cline-mcp-k8s-helper untar, the tar sent through pods/attach) and read back from the keeper
// container (pods/exec of cline-mcp-k8s-helper tar) through the same hostile-archive checks as
// Docker's copy back (sandbox/archive). The main container runs the CLI under the helper's
// wrapper, which frames stdout and stderr on the one stream the logs API gives; the exit comes
// from the pod's status. Pods are hardened (non-root unless uid 0, read-only root, no privilege
// escalation, all capabilities dropped, RuntimeDefault seccomp, no service-account token; every
// container with requests = limits: Guaranteed), get a deny-all NetworkPolicy they own, an
// activeDeadlineSeconds, and are deleted on every path; Sweep removes the pods of dead instances
// of this host, RemoveOwn those of one dead server at once (its watchdog). A run with a
// provider credential gets an egress sidecar (cline-mcp-egress sidecar, another uid) that
// receives the credential over its stdin and adds it to the run's provider requests on the pod's
// loopback: the credential is in no object of the namespace. The run's report is read from the
// pod and the policy as the API server stored them.
package kubernetes

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// Labels and annotations of a run's pod and policy.
const (
	LabelRun      = "cline-mcp.run"
	LabelInstance = "cline-mcp.instance" // the SHA-256 prefix of the instance id (label values are limited)
	AnnoInstance  = "cline-mcp.instance" // the full instance id
)

// clientQPS is the executor's request rate to the API server when the client configuration sets
// none.
const clientQPS = 50

// DefaultHelper is where the run's image holds cline-mcp-k8s-helper.
const DefaultHelper = "/usr/local/bin/cline-mcp-k8s-helper"

// DefaultEgress is where the run's image holds cline-mcp-egress, the sidecar that keeps a run's
// provider credential outside the CLI's container.
const DefaultEgress = "/usr/local/bin/cline-mcp-egress"

// Config says where and how runs go.
type Config struct {
	REST      *rest.Config
	Namespace string
	Image     string
	// Helper is cline-mcp-k8s-helper's path in Image (DefaultHelper when empty).
	Helper string
	// Egress is cline-mcp-egress's path in Image (DefaultEgress when empty): the sidecar of a
	// run whose Spec has a Credential.
	Egress string
	// PullPolicy of the image ("IfNotPresent" when empty; "Never" for images imported on the node).
	PullPolicy string
	// CPU and Memory ("2", "2Gi") are the requests and limits of the run's container (and of the
	// init container that fills its volumes); the keeper and the sidecar have small fixed ones.
	// Every container has requests = limits: the pod is Guaranteed.
	CPU, Memory string
	// RuntimeClass names a RuntimeClass (gVisor, Kata) for the pods; empty is the cluster's default.
	RuntimeClass string
	// UID and GID the pods run as when a Spec names no user (the caller's, as rootful Docker).
	UID, GID int64
	// Instance identifies this server (host-pid-start), for Sweep and RemoveOwn.
	Instance string
	// Track, when set, is told each run pod's name before the pod is created; the returned func
	// after the pod is gone (the server's lifeline: a dead server's watchdog calls RemoveOwn).
	Track func(pod string) (untrack func())
	// Deadline bounds a pod's life (activeDeadlineSeconds) when the run's context has none.
	Deadline time.Duration
	// EgressAllow are "CIDR:port" endpoints the run's NetworkPolicy lets it reach (TCP); the
	// policy denies everything else. EgressOpen makes no policy at all.
	EgressAllow []string
	EgressOpen  bool
	// EgressDNS is where the policy lets the run resolve names (UDP and TCP 53): DNSKubeDNS, a
	// resolver's address or CIDR (NodeLocal DNSCache's 169.254.20.10), or "" for nowhere.
	EgressDNS string
	// Warm is how many started pods are kept ready per pod layout (0, none; at most MaxWarm):
	// each serves one call and is replaced in the background (warm.go). Close deletes them.
	Warm int
	// WarmBackend keeps the Warm pods: "" with the executor's own pool, WarmAgentSandbox with
	// agent-sandbox's SandboxWarmPool and one SandboxClaim per call (agentsandbox.go).
	WarmBackend string
}

// Executor runs Specs in pods. It is safe for concurrent use.
type Executor struct {
	cfg   Config
	cs    kubernetes.Interface
	rest  *rest.Config
	limit archive.Limits
	warm  *warmPool // nil without Config.Warm
	asb   *asbPool  // nil unless Config.WarmBackend is WarmAgentSandbox
	// noRoom holds what is called when a call's pod finds no room on the nodes (OnNoRoom);
	// shared by copies of the Executor.
	noRoom *atomic.Pointer[func()]
}

// New checks cfg and makes an executor.
func New(cfg Config) (*Executor, error) {
	if cfg.REST == nil || cfg.Namespace == "" || cfg.Image == "" {
		return nil, errors.New("kubernetes executor: a client configuration, a namespace and an image are required")
	}
	if err := ParseEgressAllow(cfg.EgressAllow); err != nil {
		return nil, err
	}
	if err := ParseEgressDNS(cfg.EgressDNS); err != nil {
		return nil, err
	}
	if cfg.PullPolicy == "" {
		cfg.PullPolicy = string(corev1.PullIfNotPresent)
	}
	if cfg.Helper == "" {
		cfg.Helper = DefaultHelper
	}
	if cfg.Egress == "" {
		cfg.Egress = DefaultEgress
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = 2 * time.Hour
	}
	if cfg.Warm < 0 || cfg.Warm > MaxWarm {
		return nil, fmt.Errorf("kubernetes executor: warm pods must be between 0 and %d, not %d", MaxWarm, cfg.Warm)
	}
	if cfg.REST.QPS == 0 && cfg.REST.Burst == 0 {
		// client-go's default (5 requests a second, bursts of 10) would throttle a single call,
		// which makes about ten requests, and calls share it with the warm pool's.
		cfg.REST = rest.CopyConfig(cfg.REST)
		cfg.REST.QPS, cfg.REST.Burst = clientQPS, 2*clientQPS
	}
	cs, err := kubernetes.NewForConfig(cfg.REST)
	if err != nil {
		return nil, fmt.Errorf("kubernetes executor: %w", err)
	}
	e := &Executor{cfg: cfg, cs: cs, rest: cfg.REST, limit: archive.DefaultLimits, noRoom: &atomic.Pointer[func()]{}}
	switch {
	case cfg.WarmBackend != "" && cfg.WarmBackend != WarmAgentSandbox:
		return nil, fmt.Errorf("kubernetes executor: unknown warm backend %q (want %q)", cfg.WarmBackend, WarmAgentSandbox)
	case cfg.Warm > 0 && cfg.WarmBackend == WarmAgentSandbox:
		dyn, err := dynamic.NewForConfig(cfg.REST)
		if err != nil {
			return nil, fmt.Errorf("kubernetes executor: %w", err)
		}
		e.asb = newASBPool(cfg.Warm, dyn)
	case cfg.Warm > 0:
		e.warm = newWarmPool(cfg.Warm)
	}
	return e, nil
}

// instanceLabel is the label value of an instance id: its SHA-256 prefix.
func instanceLabel(id string) string {
	s := sha256.Sum256([]byte(id))
	return hex.EncodeToString(s[:8])
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var _ sandbox.Executor = (*Executor)(nil)
