package kubernetes

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// storedReport is what the run's pod and NetworkPolicy enforce as the API server stored them
// (created is the pod the create returned; pol the policy, nil without one), with the image
// that ran from the pod's status (read again now: the main container's imageID is known once it
// started). outside says the sidecar acknowledged the run's credential.
func (e *Executor) storedReport(ctx context.Context, created *corev1.Pod, pol *networkingv1.NetworkPolicy, spec sandbox.Spec, outside bool) *sandbox.ContainerReport {
	pod := created
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if p, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Get(gctx, created.Name, metav1.GetOptions{}); err == nil {
		pod = p
	}
	r := reportOf(pod, pol, spec)
	r.CredentialOutside = outside && hasSidecar(pod)
	return r
}

// reportOf is what pod and pol enforce for the run: the main container's hardening, user,
// mounts and memory, the image that ran, and what the policy lets the pod reach.
func reportOf(pod *corev1.Pod, pol *networkingv1.NetworkPolicy, spec sandbox.Spec) *sandbox.ContainerReport {
	var c corev1.Container
	for _, ct := range pod.Spec.Containers {
		if ct.Name == mainName {
			c = ct
		}
	}
	sc, psc := c.SecurityContext, pod.Spec.SecurityContext
	r := &sandbox.ContainerReport{Engine: "kubernetes", Image: c.Image, Mounts: []sandbox.MountReport{}, Egress: sandbox.EgressOpen}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == mainName {
			r.ImageID = cs.ImageID
		}
	}
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
	r.Network = "pod network, no NetworkPolicy (egress open)"
	if pol != nil {
		r.Egress, r.Allowed = sandbox.EgressPolicy, policyAllows(pol)
		r.Network = "pod network, NetworkPolicy " + pol.Name + ": " + policyWords(pol, r.Allowed) +
			" (enforced only where the cluster's CNI enforces NetworkPolicy)"
	}
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

func hasSidecar(p *corev1.Pod) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == sidecarName && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return true
		}
	}
	return false
}

// policyWords says in one phrase what pol does to its pods' traffic.
func policyWords(pol *networkingv1.NetworkPolicy, allowed []string) string {
	var parts []string
	for _, t := range pol.Spec.PolicyTypes {
		switch {
		case t == networkingv1.PolicyTypeIngress && len(pol.Spec.Ingress) == 0:
			parts = append(parts, "ingress denied")
		case t == networkingv1.PolicyTypeEgress && len(allowed) == 0:
			parts = append(parts, "egress denied")
		case t == networkingv1.PolicyTypeEgress:
			parts = append(parts, "egress only to "+strings.Join(allowed, ", "))
		}
	}
	return "deny-all: " + strings.Join(parts, "; ")
}

// policyAllows lists the egress pol allows, one "peer:port/protocol" per peer and port: an
// ipBlock by its CIDR (with " except ..."), pods by "namespace-labels/pod-labels" ("*" for any),
// "*" for any destination or port.
func policyAllows(pol *networkingv1.NetworkPolicy) []string {
	var out []string
	for _, rule := range pol.Spec.Egress {
		peers := []string{"*"}
		if len(rule.To) > 0 {
			peers = peers[:0]
			for _, p := range rule.To {
				peers = append(peers, peerText(p))
			}
		}
		ports := []string{"*"}
		if len(rule.Ports) > 0 {
			ports = ports[:0]
			for _, p := range rule.Ports {
				port, proto := "*", "TCP"
				if p.Port != nil {
					port = p.Port.String()
					if p.EndPort != nil {
						port += "-" + strconv.Itoa(int(*p.EndPort))
					}
				}
				if p.Protocol != nil {
					proto = string(*p.Protocol)
				}
				ports = append(ports, port+"/"+proto)
			}
		}
		for _, peer := range peers {
			for _, port := range ports {
				out = append(out, peer+":"+port)
			}
		}
	}
	return out
}

func peerText(p networkingv1.NetworkPolicyPeer) string {
	if b := p.IPBlock; b != nil {
		s := b.CIDR
		if len(b.Except) > 0 {
			s += " except " + strings.Join(b.Except, ",")
		}
		return s
	}
	ns, pods := "*", "*"
	if p.NamespaceSelector == nil {
		ns = "(its namespace)"
	} else if s := selectorText(p.NamespaceSelector); s != "" {
		ns = s
		if v, ok := p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]; ok && len(p.NamespaceSelector.MatchLabels) == 1 && len(p.NamespaceSelector.MatchExpressions) == 0 {
			ns = v
		}
	}
	if p.PodSelector != nil {
		if s := selectorText(p.PodSelector); s != "" {
			pods = s
		}
	}
	return ns + "/" + pods
}

// selectorText is s in kubectl's words, "" for the empty selector (everything).
func selectorText(s *metav1.LabelSelector) string {
	if len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		return ""
	}
	return metav1.FormatLabelSelector(s)
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
