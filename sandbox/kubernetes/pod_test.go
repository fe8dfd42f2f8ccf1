package kubernetes

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

func testExecutor(t *testing.T) *Executor {
	t.Helper()
	return &Executor{cs: fake.NewClientset(), cfg: Config{Namespace: "ns", Image: "img:1", Helper: DefaultHelper,
		CPU: "2", Memory: "2Gi", UID: 1000, GID: 1000, Instance: "host-12-34", RuntimeClass: "gvisor"}}
}

// TestPodHardening: every container of a run's pod is hardened, the pod runs as the caller
// without a service-account token, mounts are read-only in the main container as the Spec says,
// tmpfs is memory, requests equal limits, and the labels find the run and its instance.
func TestPodHardening(t *testing.T) {
	e := testExecutor(t)
	spec := sandbox.Spec{Path: "/usr/local/bin/cline", Args: []string{"-y", "hi"}, Env: []string{"A=1"}, Dir: "/work",
		Mounts: []sandbox.Mount{{Source: "/src", Target: "/work", ReadOnly: true}, {Source: "/d", Target: "/data"}},
		Tmpfs:  []sandbox.Tmpfs{{Target: "/tmp", SizeMB: 64}}, Labels: map[string]string{"cline-mcp.tool": "ask_cline"}}
	pod, err := e.podFor(spec, copiesOf(spec), "abc", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ps := pod.Spec
	if *ps.AutomountServiceAccountToken || *ps.SecurityContext.RunAsUser != 1000 || !*ps.SecurityContext.RunAsNonRoot ||
		ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || *ps.ActiveDeadlineSeconds != 3600 ||
		*ps.RuntimeClassName != "gvisor" || ps.RestartPolicy != corev1.RestartPolicyNever || ps.HostNetwork || ps.HostPID {
		t.Errorf("pod spec not hardened: %+v", ps)
	}
	all := append(append([]corev1.Container(nil), ps.InitContainers...), ps.Containers...)
	if len(all) != 3 {
		t.Fatalf("containers: %d, want the fill, the main one and the keeper", len(all))
	}
	for _, c := range all {
		sc := c.SecurityContext
		if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || *sc.Privileged || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container %s not hardened: %+v", c.Name, sc)
		}
	}
	main := ps.Containers[0]
	if got := strings.Join(main.Command, " "); got != DefaultHelper+" run -- /usr/local/bin/cline -y hi" {
		t.Errorf("command %q", got)
	}
	if main.VolumeMounts[0].ReadOnly != true || main.VolumeMounts[1].ReadOnly || main.WorkingDir != "/work" {
		t.Errorf("main mounts %+v", main.VolumeMounts)
	}
	if q := main.Resources.Limits[corev1.ResourceMemory]; q.String() != "2Gi" || !equalRL(main.Resources.Limits, main.Resources.Requests) {
		t.Errorf("resources %+v", main.Resources)
	}
	if v := ps.Volumes[2].EmptyDir; v.Medium != corev1.StorageMediumMemory || v.SizeLimit.String() != "64Mi" {
		t.Errorf("tmpfs volume %+v", v)
	}
	if ps.Containers[1].Name != keeperName || len(ps.InitContainers) != 1 {
		t.Error("the keeper is not the second container, or there is more than one fill")
	}
	if main.Stdin || main.StdinOnce {
		t.Error("a run without stdin has a main container with stdin")
	}
	spec.Stdin = strings.NewReader("{}\n") // an ACP run
	if withIn, err := e.podFor(spec, copiesOf(spec), "abd", time.Hour); err != nil || !withIn.Spec.Containers[0].Stdin || !withIn.Spec.Containers[0].StdinOnce || withIn.Spec.Containers[1].Stdin {
		t.Errorf("an ACP run's pod: main stdin %v once %v, keeper stdin %v (%v)", withIn.Spec.Containers[0].Stdin, withIn.Spec.Containers[0].StdinOnce, withIn.Spec.Containers[1].Stdin, err)
	}
	if pod.Labels[LabelRun] != "abc" || pod.Labels[LabelInstance] != instanceLabel("host-12-34") || pod.Annotations[AnnoInstance] != "host-12-34" || pod.Labels["cline-mcp.tool"] != "ask_cline" {
		t.Errorf("labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	np := denyAll(pod, nil, "")
	if len(np.Spec.Ingress)+len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 || np.OwnerReferences[0].Name != pod.Name {
		t.Errorf("policy %+v", np)
	}
	root, err := e.podFor(sandbox.Spec{Path: "/x", User: "0:0"}, nil, "r", time.Hour)
	if err != nil || *root.Spec.SecurityContext.RunAsNonRoot {
		t.Errorf("uid 0: %v, runAsNonRoot %v", err, *root.Spec.SecurityContext.RunAsNonRoot)
	}
	if _, err := e.podFor(sandbox.Spec{Path: "/x", User: "me"}, nil, "r", time.Hour); err == nil {
		t.Error("a user that is not uid:gid was accepted")
	}
}

func equalRL(a, b corev1.ResourceList) bool {
	for k, v := range a {
		if w := b[k]; w.Cmp(v) != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// TestExitOf: the main container's status maps like Docker's (128+n names signal n; OOM).
func TestExitOf(t *testing.T) {
	if x := exitOf(&corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}); !x.OOMKilled || x.Signal != "SIGKILL" {
		t.Errorf("OOM: %+v", x)
	}
	if x := exitOf(&corev1.ContainerStateTerminated{ExitCode: 130}); x.Code != 130 || x.Signal != "SIGINT" {
		t.Errorf("130: %+v", x)
	}
}

// TestSweepRemovesDeadInstances: the pods of a dead instance go, those of live ones and of this
// server stay.
func TestSweepRemovesDeadInstances(t *testing.T) {
	e := testExecutor(t)
	ctx := context.Background()
	for name, id := range map[string]string{"dead": "host-1-1", "live": "host-2-2", "own": "host-12-34"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Labels: map[string]string{LabelRun: name, LabelInstance: instanceLabel(id)}, Annotations: map[string]string{AnnoInstance: id}}}
		if _, err := e.cs.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.Sweep(ctx, func(id string) bool { return id == "host-1-1" })
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	left, _ := e.cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if len(left.Items) != 2 {
		t.Errorf("left %d pods, want live and own", len(left.Items))
	}
}

// TestDemux: the wrapper's frames split into stdout and stderr; a log that is not the
// wrapper's stream is an error, not silence.
func TestDemux(t *testing.T) {
	frame := func(s byte, p string) string {
		return string([]byte{s, 0, 0, 0, 0, 0, 0, byte(len(p))}) + p
	}
	var out, errb strings.Builder
	if err := demux(&out, &errb, strings.NewReader(frame(1, "hello ")+frame(2, "warn")+frame(1, "world"))); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello world" || errb.String() != "warn" {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
	if err := demux(&out, &errb, strings.NewReader("plain text from a program without the wrapper")); err == nil {
		t.Error("an unframed log gave no error")
	}
}

// TestEgressAllow: the policy lets the run reach exactly the CIDR:port entries; bad entries are
// refused before any pod exists.
func TestEgressAllow(t *testing.T) {
	np := denyAll(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{LabelRun: "r"}}}, []string{"10.1.2.3:443", "192.168.0.0/16:8080"}, "")
	if len(np.Spec.Egress) != 2 || np.Spec.Egress[0].To[0].IPBlock.CIDR != "10.1.2.3/32" || np.Spec.Egress[1].Ports[0].Port.IntValue() != 8080 {
		t.Errorf("egress rules %+v", np.Spec.Egress)
	}
	for _, bad := range []string{"api.example.com:443", "10.0.0.1", "10.0.0.0/8:0", "::1"} {
		if ParseEgressAllow([]string{bad}) == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// TestEgressDNS: the policy lets the run resolve names (UDP and TCP 53) at the cluster's DNS
// pods (kube-system's k8s-app=kube-dns), at a resolver's address, or nowhere; the report says
// which; anything else is refused before any pod exists.
func TestEgressDNS(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{LabelRun: "r"}}}
	np := denyAll(pod, []string{"10.1.2.3:443"}, DNSKubeDNS)
	if len(np.Spec.Egress) != 2 {
		t.Fatalf("egress rules %+v, want DNS and the allowed endpoint", np.Spec.Egress)
	}
	dns := np.Spec.Egress[0]
	if peer := dns.To[0]; peer.IPBlock != nil || peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kube-system" ||
		peer.PodSelector.MatchLabels["k8s-app"] != "kube-dns" {
		t.Errorf("DNS peer %+v", peer)
	}
	if len(dns.Ports) != 2 || *dns.Ports[0].Protocol != corev1.ProtocolUDP || *dns.Ports[1].Protocol != corev1.ProtocolTCP || dns.Ports[0].Port.IntValue() != 53 {
		t.Errorf("DNS ports %+v", dns.Ports)
	}
	if np := denyAll(pod, nil, "169.254.20.10"); len(np.Spec.Egress) != 1 || np.Spec.Egress[0].To[0].IPBlock.CIDR != "169.254.20.10/32" {
		t.Errorf("a resolver's address: %+v", np.Spec.Egress)
	}
	if np := denyAll(pod, nil, ""); len(np.Spec.Egress) != 0 {
		t.Errorf("no DNS: %+v", np.Spec.Egress)
	}
	r := reportOf(pod, np, sandbox.Spec{})
	if want := "kube-system/k8s-app=kube-dns:53/UDP kube-system/k8s-app=kube-dns:53/TCP 10.1.2.3/32:443/TCP"; r.Egress != sandbox.EgressPolicy || strings.Join(r.Allowed, " ") != want {
		t.Errorf("report: egress %s allowed %q, want %q", r.Egress, r.Allowed, want)
	}
	if !strings.Contains(r.Network, "deny-all: ingress denied; egress only to kube-system/k8s-app=kube-dns:53/UDP") {
		t.Errorf("network %q", r.Network)
	}
	if r := reportOf(pod, denyAll(pod, nil, ""), sandbox.Spec{}); len(r.Allowed) != 0 || !strings.Contains(r.Network, "egress denied") {
		t.Errorf("no DNS, nothing allowed: %q %q", r.Allowed, r.Network)
	}
	if r := reportOf(pod, nil, sandbox.Spec{}); r.Egress != sandbox.EgressOpen || len(r.Allowed) != 0 {
		t.Errorf("no policy: %s %q", r.Egress, r.Allowed)
	}
	for _, bad := range []string{"coredns", "10.0.0.1:53", "none"} {
		if ParseEgressDNS(bad) == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func copiesOf(spec sandbox.Spec) []*copied {
	var cs []*copied
	for _, m := range spec.Mounts {
		cs = append(cs, &copied{m: m})
	}
	return cs
}

// TestFileMountBySubPath: a read-only file mount reaches the main container as the file itself
// (subPath of its emptyDir), the fill and keeper see it at a directory of their own.
func TestFileMountBySubPath(t *testing.T) {
	e := testExecutor(t)
	spec := sandbox.Spec{Path: "/x", Mounts: []sandbox.Mount{{Source: "/w", Target: "/w"}, {Source: "/w/.git", Target: "/w/.git", ReadOnly: true}}}
	cs := copiesOf(spec)
	cs[1].file = true
	pod, err := e.podFor(spec, cs, "f", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	vm := pod.Spec.Containers[0].VolumeMounts[1]
	if vm.MountPath != "/w/.git" || vm.SubPath != ".git" || !vm.ReadOnly {
		t.Errorf("main's file mount %+v", vm)
	}
	if got := strings.Join(pod.Spec.InitContainers[0].Command, " "); got != DefaultHelper+" untar /w "+fileStage(1) {
		t.Errorf("the fill: got %q, want the tree's target, then the file's stage", got)
	}
}

// TestPodGuaranteedWithSidecar: a run with a credential gets the egress sidecar first — a native
// sidecar (restartPolicy Always) of cline-mcp-egress with a stdin, as a uid of its own, with the
// only mount of its private volume — and the CLI waits for its forwarder; no process namespace
// is shared; every container, the fill, the keeper and the sidecar included, has requests equal
// to limits for CPU and memory (Guaranteed QoS); the credential is nowhere in the pod object.
func TestPodGuaranteedWithSidecar(t *testing.T) {
	e := testExecutor(t)
	e.cfg.Egress = DefaultEgress
	spec := sandbox.Spec{Path: "/usr/local/bin/cline", Mounts: []sandbox.Mount{{Source: "/w", Target: "/w"}},
		Credential: &sandbox.Credential{Upstream: "https://api.example.com", Headers: map[string]string{"Authorization": "Bearer sk-secret-1"}}}
	pod, err := e.podFor(spec, copiesOf(spec), "g", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ps := pod.Spec
	if len(ps.InitContainers) != 2 || ps.InitContainers[0].Name != sidecarName || ps.InitContainers[1].Name != fillName {
		t.Fatalf("init containers %+v, want the sidecar, then the fill", ps.InitContainers)
	}
	sc := ps.InitContainers[0]
	if sc.RestartPolicy == nil || *sc.RestartPolicy != corev1.ContainerRestartPolicyAlways || !sc.Stdin || !sc.StdinOnce ||
		strings.Join(sc.Command, " ") != DefaultEgress+" sidecar -dir "+sidecarDir || *sc.SecurityContext.RunAsUser == 1000 ||
		*sc.SecurityContext.RunAsGroup == 1000 || len(sc.Env) != 0 {
		t.Errorf("sidecar %+v", sc)
	}
	for _, c := range append(append([]corev1.Container(nil), ps.InitContainers...), ps.Containers...) {
		for _, m := range c.VolumeMounts {
			if (m.Name == sidecarName) != (c.Name == sidecarName) {
				t.Errorf("container %s mounts %s", c.Name, m.Name)
			}
		}
		rs := c.Resources
		if !equalRL(rs.Requests, rs.Limits) || rs.Limits.Cpu().IsZero() || rs.Limits.Memory().IsZero() {
			t.Errorf("container %s: requests %v limits %v, want equal CPU and memory", c.Name, rs.Requests, rs.Limits)
		}
	}
	if ps.ShareProcessNamespace != nil && *ps.ShareProcessNamespace {
		t.Error("the pod shares its process namespace")
	}
	if got := strings.Join(ps.Containers[0].Command, " "); got != DefaultHelper+" run --wait "+sandbox.ProviderProxyAddr+" -- /usr/local/bin/cline" {
		t.Errorf("main command %q", got)
	}
	if b, _ := json.Marshal(pod); strings.Contains(string(b), "sk-secret-1") {
		t.Error("the pod object holds the credential")
	}
	if sidecarUID(65532) == 65532 {
		t.Error("the sidecar's uid equals the run's")
	}
}

// TestRemoveOwn: a dead server's watchdog removes that instance's pods and their policies, not
// another instance's.
func TestRemoveOwn(t *testing.T) {
	e := testExecutor(t)
	ctx := context.Background()
	for name, id := range map[string]string{"mine": "host-12-34", "other": "host-2-2"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Labels: map[string]string{LabelRun: name, LabelInstance: instanceLabel(id)}, Annotations: map[string]string{AnnoInstance: id}}}
		if _, err := e.cs.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.cs.NetworkingV1().NetworkPolicies("ns").Create(ctx, denyAll(p, nil, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.RemoveOwn(ctx)
	if err != nil || n != 1 {
		t.Fatalf("removed %d, %v", n, err)
	}
	pods, _ := e.cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	pols, _ := e.cs.NetworkingV1().NetworkPolicies("ns").List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 1 || pods.Items[0].Name != "other" || len(pols.Items) != 1 || pols.Items[0].Name != "other" {
		t.Errorf("left %d pods, %d policies; want only the other instance's", len(pods.Items), len(pols.Items))
	}
}

// TestUpstreamAllow: the provider's resolved addresses, IPv4 and IPv6, become the policy's
// rules on the upstream's port.
func TestUpstreamAllow(t *testing.T) {
	u, err := resolveUpstream(context.Background(), &sandbox.Credential{Upstream: "https://[2001:db8::5]"})
	if err != nil {
		t.Fatal(err)
	}
	u.addrs = append(u.addrs, netip.MustParseAddr("10.1.2.3"))
	np := denyAll(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{LabelRun: "r"}}}, u.allow(), "")
	if got := policyAllows(np); strings.Join(got, " ") != "2001:db8::5/128:443/TCP 10.1.2.3/32:443/TCP" {
		t.Errorf("policy allows %q", got)
	}
	if _, err := resolveUpstream(context.Background(), &sandbox.Credential{Upstream: "ftp://x"}); err == nil {
		t.Error("an upstream that is not http(s) was accepted")
	}
}
