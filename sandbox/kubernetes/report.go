package kubernetes

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if e.cfg.EgressOpen {
		return "none (egress open)"
	}
	var but []string
	switch dns := e.cfg.EgressDNS; {
	case dns == DNSKubeDNS:
		but = append(but, "DNS (UDP/TCP 53) to kube-system's k8s-app=kube-dns pods")
	case dns != "":
		but = append(but, "DNS (UDP/TCP 53) to "+dns)
	}
	but = append(but, e.cfg.EgressAllow...)
	if len(but) == 0 {
		return "deny-all"
	}
	return "deny-all but " + strings.Join(but, ", ")
}

// DNSKubeDNS is Config.EgressDNS for the cluster's DNS: the pods labelled k8s-app=kube-dns in
// kube-system (CoreDNS keeps that label on kubeadm, EKS, GKE, AKS and k3s clusters).
const DNSKubeDNS = "kube-dns"

// ParseEgressDNS checks Config.EgressDNS: "", DNSKubeDNS, or an address or CIDR.
func ParseEgressDNS(dns string) error {
	if dns == "" || dns == DNSKubeDNS {
		return nil
	}
	if _, _, err := egressRule(dns + ":53"); err != nil {
		return fmt.Errorf("--k8s-egress-dns %q: want kube-dns, none, or the resolver's address or CIDR", dns)
	}
	return nil
}

// dnsRule is the policy's egress rule for DNS (UDP and TCP 53), nil for none.
func dnsRule(dns string) []networkingv1.NetworkPolicyEgressRule {
	if dns == "" {
		return nil
	}
	udp, tcp, port := corev1.ProtocolUDP, corev1.ProtocolTCP, intstr.FromInt32(53)
	rule := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &port}, {Protocol: &tcp, Port: &port}}}
	if dns == DNSKubeDNS {
		rule.To = []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}}}
	} else {
		cidr, _, _ := egressRule(dns + ":53")
		rule.To = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}}
	}
	return []networkingv1.NetworkPolicyEgressRule{rule}
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
