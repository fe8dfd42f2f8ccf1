package kubernetes

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Container names of a run's pod.
const (
	fillName   = "fill" // the init container that unpacks every mount's archive
	mainName   = "cline"
	keeperName = "keeper" // holds the emptyDirs after the run and answers the copy back
	// sidecarName is the native sidecar (cline-mcp-egress sidecar) that holds a run's provider
	// credential and serves its provider requests on the pod's loopback.
	sidecarName = "egress"
)

// sidecarDir is where the sidecar keeps its proxy's socket: a volume no other container mounts.
const sidecarDir = "/run/cline-mcp-egress"

// Fixed bounds of the containers that are not the run's (requests = limits, so that the pod is
// Guaranteed): the keeper answers the copy back's tar, the sidecar forwards provider requests.
const (
	keeperCPU, keeperMemory   = "250m", "64Mi"
	sidecarCPU, sidecarMemory = "100m", "64Mi"
)

// podFor is the pod of one run: one init container that fills the mounts' emptyDirs, then the
// main container with the run's command under the helper's wrapper and the keeper, which holds
// the emptyDirs for the copy back until the pod is deleted. One fill container, not one per
// mount: the kubelet starts each init container about a second after the previous one ended.
func (e *Executor) podFor(spec sandbox.Spec, cs []*copied, runID string, deadline time.Duration) (*corev1.Pod, error) {
	uid, gid, err := e.user(spec.User)
	if err != nil {
		return nil, err
	}
	var vols []corev1.Volume
	var all, mainMounts []corev1.VolumeMount
	for i, c := range cs {
		name, m := "m"+strconv.Itoa(i), c.m
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		if c.file {
			// The fill and the keeper see the file's emptyDir at a directory of its own; the
			// main container gets the file itself at its Target (subPath).
			all = append(all, corev1.VolumeMount{Name: name, MountPath: fileStage(i)})
			mainMounts = append(mainMounts, corev1.VolumeMount{Name: name, MountPath: m.Target, SubPath: path.Base(m.Target), ReadOnly: true})
			continue
		}
		all = append(all, corev1.VolumeMount{Name: name, MountPath: m.Target})
		mainMounts = append(mainMounts, corev1.VolumeMount{Name: name, MountPath: m.Target, ReadOnly: m.ReadOnly})
	}
	for i, t := range spec.Tmpfs {
		name := "t" + strconv.Itoa(i)
		size := resource.NewQuantity(int64(t.SizeMB)<<20, resource.BinarySI)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: size}}})
		mainMounts = append(mainMounts, corev1.VolumeMount{Name: name, MountPath: t.Target})
	}
	var inits []corev1.Container
	mainCmd := []string{e.cfg.Helper, "run", "--"}
	if spec.Credential != nil {
		sc, err := e.sidecar(uid)
		if err != nil {
			return nil, err
		}
		inits = append(inits, sc)
		vols = append(vols, corev1.Volume{Name: sidecarName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(1<<20, resource.BinarySI)}}})
		// The CLI starts once the sidecar holds the credential (it listens only then).
		mainCmd = []string{e.cfg.Helper, "run", "--wait", sandbox.ProviderProxyAddr, "--"}
	}
	if len(cs) > 0 {
		cmd := []string{e.cfg.Helper, "untar"}
		for i, cp := range cs {
			dest := cp.m.Target
			if cp.file {
				dest = fileStage(i)
			}
			cmd = append(cmd, dest)
		}
		c := e.container(fillName, cmd, nil)
		c.VolumeMounts, c.Stdin, c.StdinOnce = all, true, true
		// As much as the run's own container: init containers run before it, so the pod's
		// request does not grow, and the unpacking is not throttled.
		if err := bound(&c, e.cfg.CPU, e.cfg.Memory); err != nil {
			return nil, err
		}
		inits = append(inits, c)
	}
	// The keeper is a regular container, not a native sidecar: the kubelet stops sidecars as soon
	// as the main container ends, and the copy back comes after that.
	keeper := e.container(keeperName, []string{e.cfg.Helper, "wait"}, nil)
	keeper.VolumeMounts = all
	if err := bound(&keeper, keeperCPU, keeperMemory); err != nil {
		return nil, err
	}
	main := e.container(mainName, append(append(mainCmd, spec.Path), spec.Args...), spec.Env)
	main.VolumeMounts, main.WorkingDir = mainMounts, spec.Dir
	// A run that speaks on stdin (ACP) gets it through pods/attach; its end closes it.
	main.Stdin, main.StdinOnce = spec.Stdin != nil, spec.Stdin != nil
	if err := bound(&main, e.cfg.CPU, e.cfg.Memory); err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	labels[LabelRun], labels[LabelInstance] = runID, instanceLabel(e.cfg.Instance)
	grace := int64(sandbox.DefaultStopGrace.Seconds())
	if spec.StopGrace > 0 {
		grace = int64(max(1, spec.StopGrace.Round(time.Second).Seconds()))
	}
	active := int64(max(60, deadline.Seconds()))
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cline-mcp-" + runID, Labels: labels,
			Annotations: map[string]string{AnnoInstance: e.cfg.Instance}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, InitContainers: inits, Containers: []corev1.Container{main, keeper},
			Volumes: vols, AutomountServiceAccountToken: &no, EnableServiceLinks: &no,
			TerminationGracePeriodSeconds: &grace, ActiveDeadlineSeconds: &active,
			SecurityContext: podSecurity(uid, gid), RuntimeClassName: runtimeClass(e.cfg.RuntimeClass),
		},
	}
	return pod, nil
}

// podSecurity is the pod-level security context of every pod the executor makes.
func podSecurity(uid, gid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &gid,
		RunAsNonRoot: boolPtr(uid != 0), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

func boolPtr(b bool) *bool { return &b }

// fileStage is where the fill and keeper containers see the emptyDir of file mount i.
func fileStage(i int) string { return "/cline-mcp-files/" + strconv.Itoa(i) }

// container is a hardened container of the run's image.
func (e *Executor) container(name string, cmd, env []string) corev1.Container {
	no, yes := false, true
	c := corev1.Container{Name: name, Image: e.cfg.Image, ImagePullPolicy: corev1.PullPolicy(e.cfg.PullPolicy), Command: cmd,
		SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no, Privileged: &no,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: v})
	}
	return c
}

// sidecar is the egress sidecar of a run with a credential: a native sidecar (an init container
// that keeps running) of cline-mcp-egress in the run's image, as a user of its own (the CLI's
// uid cannot read its memory; without a shared process namespace it cannot even see it), with
// a stdin the executor writes the credential to (pods/attach) and a private volume for its
// proxy's socket.
func (e *Executor) sidecar(runUID int64) (corev1.Container, error) {
	c := e.container(sidecarName, []string{e.cfg.Egress, "sidecar", "-dir", sidecarDir}, nil)
	always := corev1.ContainerRestartPolicyAlways
	id := sidecarUID(runUID)
	c.RestartPolicy, c.Stdin, c.StdinOnce = &always, true, true
	c.SecurityContext.RunAsUser, c.SecurityContext.RunAsGroup = &id, &id
	c.VolumeMounts = []corev1.VolumeMount{{Name: sidecarName, MountPath: sidecarDir}}
	return c, bound(&c, sidecarCPU, sidecarMemory)
}

// sidecarUID is the sidecar's uid and gid: 65532, or 65533 when the run itself is 65532.
func sidecarUID(runUID int64) int64 {
	if runUID == 65532 {
		return 65533
	}
	return 65532
}

// bound sets c's requests = limits (Guaranteed QoS when every container of the pod has both:
// a busy node does not evict the run first).
func bound(c *corev1.Container, cpu, memory string) error {
	rl := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("kubernetes executor: %s %q: %w", name, v, err)
		}
		rl[name] = q
	}
	if len(rl) > 0 {
		c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
	}
	return nil
}

// user is the uid and gid of a Spec's "uid:gid", else the configured ones.
func (e *Executor) user(u string) (int64, int64, error) {
	if u == "" {
		return e.cfg.UID, e.cfg.GID, nil
	}
	a, b, ok := strings.Cut(u, ":")
	uid, err1 := strconv.ParseInt(a, 10, 64)
	gid, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("kubernetes executor: user %q is not uid:gid", u)
	}
	return uid, gid, nil
}

// denyAll is the run's NetworkPolicy: no traffic in or out of its pod but DNS as dns says
// (Config.EgressDNS) and to allow (egress, TCP: Config.EgressAllow and the addresses of the
// provider the run's sidecar reaches). The pod owns it, so the garbage collector removes it with
// the pod.
func denyAll(pod *corev1.Pod, allow []string, dns string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Labels: map[string]string{LabelRun: pod.Labels[LabelRun], LabelInstance: pod.Labels[LabelInstance]},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: pod.Labels[LabelRun]}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      append(dnsRule(dns), allowRules(allow)...),
		},
	}
}

// cleanTarget is a mount target as the pod needs it: absolute and clean.
func cleanTarget(t string) (string, error) {
	if !path.IsAbs(t) || path.Clean(t) != t {
		return "", fmt.Errorf("kubernetes executor: mount target %q is not a clean absolute path", t)
	}
	return t, nil
}
