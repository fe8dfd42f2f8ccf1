package kubernetes

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// reportOf is what the pod the API server stored enforces for the run (not the executor's
// options): its main container's hardening, user, mounts and memory, and the network policy.
func (e *Executor) reportOf(pod *corev1.Pod, spec sandbox.Spec) *sandbox.ContainerReport {
	c := pod.Spec.Containers[0]
	sc, psc := c.SecurityContext, pod.Spec.SecurityContext
	r := &sandbox.ContainerReport{Engine: "kubernetes", Image: c.Image, Mounts: []sandbox.MountReport{}, Egress: e.egressMode()}
	if psc != nil && psc.RunAsUser != nil && psc.RunAsGroup != nil {
		r.User = fmt.Sprintf("%d:%d", *psc.RunAsUser, *psc.RunAsGroup)
	}
	if sc != nil {
		r.ReadOnlyRoot = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		r.NoNewPrivileges = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
		r.Privileged = sc.Privileged != nil && *sc.Privileged
		if sc.Capabilities != nil {
			for _, d := range sc.Capabilities.Drop {
				r.CapDrop = append(r.CapDrop, string(d))
			}
		}
	}
	r.Network = "pod network, NetworkPolicy " + e.policyText() + " (enforced only where the cluster's CNI enforces NetworkPolicy)"
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		r.MemoryBytes = q.Value()
	}
	tmpfs := map[string]bool{}
	for _, t := range spec.Tmpfs {
		tmpfs[t.Target] = true
	}
	for _, m := range c.VolumeMounts {
		kind := "copy"
		if tmpfs[m.MountPath] {
			kind = "tmpfs"
		}
		r.Mounts = append(r.Mounts, sandbox.MountReport{Target: m.MountPath, ReadOnly: m.ReadOnly, Kind: kind})
	}
	slices.SortFunc(r.Mounts, func(a, b sandbox.MountReport) int { return strings.Compare(a.Target, b.Target) })
	return r
}

func (e *Executor) egressMode() sandbox.EgressMode {
	if e.cfg.EgressOpen {
		return sandbox.EgressOpen
	}
	return sandbox.EgressNone
}

func (e *Executor) policyText() string {
	switch {
	case e.cfg.EgressOpen:
		return "none (egress open)"
	case len(e.cfg.EgressAllow) == 0:
		return "deny-all"
	}
	return "deny-all but " + strings.Join(e.cfg.EgressAllow, ", ")
}

// ParseEgressAllow checks "CIDR:port" entries (an address alone is a /32 or /128).
func ParseEgressAllow(in []string) error {
	for _, a := range in {
		if _, _, err := egressRule(a); err != nil {
			return err
		}
	}
	return nil
}

func egressRule(a string) (string, int, error) {
	i := strings.LastIndex(a, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("--k8s-egress-allow %q: want CIDR:port", a)
	}
	cidr, ps := a[:i], a[i+1:]
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("--k8s-egress-allow %q: bad port", a)
	}
	if ip := net.ParseIP(cidr); ip != nil {
		if ip.To4() != nil {
			cidr += "/32"
		} else {
			cidr += "/128"
		}
	}
	if _, _, err := net.ParseCIDR(cidr); err != nil {
		return "", 0, fmt.Errorf("--k8s-egress-allow %q: %v", a, err)
	}
	return cidr, port, nil
}

// allowRules are the policy's egress rules for Config.EgressAllow (TCP to each CIDR:port).
func allowRules(allow []string) []networkingv1.NetworkPolicyEgressRule {
	var out []networkingv1.NetworkPolicyEgressRule
	tcp := corev1.ProtocolTCP
	for _, a := range allow {
		cidr, port, err := egressRule(a)
		if err != nil {
			continue
		}
		p := intstr.FromInt32(int32(port))
		out = append(out, networkingv1.NetworkPolicyEgressRule{
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p}},
		})
	}
	return out
}
