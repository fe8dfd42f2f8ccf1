//go:build e2e && linux

package testcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) { Main(m) }

// TestClusterRunsPods: the node is Ready; a FROM-scratch image imported with ImportArchive (and
// with ImportDockerImage when a Docker engine answers) runs to Succeeded and its log is read
// through the API; five pods in a row give the start latency, and the components' memory is
// logged. Then Stop leaves nothing behind.
func TestClusterRunsPods(t *testing.T) {
	c := Start(t)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	node, err := cs.CoreV1().Nodes().Get(ctx, "k8s-trial-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !ready(node) {
		t.Fatalf("node not Ready: %+v", node.Status.Conditions)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "testcluster-"}}
	if ns, err = cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const ref = "testcluster.local/echo:1"
	c.ImportArchive(t, scratchImage(t, c, ref))
	var lat []time.Duration
	for i := range 5 {
		d, log := runPod(ctx, t, c, cs, ns.Name, ref, "echo", "hello", "from", fmt.Sprint(i))
		if want := fmt.Sprintf("hello from %d", i); log != want {
			t.Errorf("pod %d log: got %q, want %q", i, log, want)
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	t.Logf("cluster up (etcd to a Ready node) in %v", c.UpTime)
	t.Logf("pod create → Succeeded: median %v (min %v, max %v, n=5); components' RSS %d MiB", lat[2], lat[0], lat[4], rssMiB(c))
	t.Run("ImportDockerImage", func(t *testing.T) {
		if exec.Command("docker", "info").Run() != nil {
			t.Skip("no Docker engine answers")
		}
		const dref = "testcluster.local/docker-echo:1"
		tar := scratchImage(t, c, dref)
		if out, err := exec.Command("docker", "load", "-i", tar).CombinedOutput(); err != nil {
			t.Fatalf("docker load: %v\n%s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("docker", "rmi", dref).Run() })
		c.ImportDockerImage(t, dref)
		if _, log := runPod(ctx, t, c, cs, ns.Name, dref, "echo", "via", "docker"); log != "via docker" {
			t.Errorf("pod log: got %q, want %q", log, "via docker")
		}
	})
	pids := componentPids(c)
	Stop()
	if left := leftovers(c, pids); len(left) > 0 {
		t.Errorf("teardown left:\n%s", strings.Join(left, "\n"))
	}
}

// runPod runs the image's tool with args to Succeeded and returns the time it took and its log.
func runPod(ctx context.Context, t *testing.T, c *Cluster, cs kubernetes.Interface, ns, image string, args ...string) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "echo-"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: new(bool),
		Containers: []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullNever, Args: args}},
	}}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodSucceeded {
			break
		}
		if p.Status.Phase == corev1.PodFailed || ctx.Err() != nil {
			t.Fatalf("pod %s: %s %+v", pod.Name, p.Status.Phase, p.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d := time.Since(start)
	rc, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return d, strings.TrimSpace(string(b))
}

// scratchImage writes a docker-archive of a FROM-scratch image named ref holding the test tool.
func scratchImage(t *testing.T, c *Cluster, ref string) string {
	t.Helper()
	tar := filepath.Join(t.TempDir(), "image.tar")
	mk := filepath.Join(filepath.Dir(scriptPath()), "images", "mkimage.sh")
	if out, err := exec.Command("bash", mk, filepath.Join(c.Dir, "images", "tool-bin"), "tool", ref, tar).CombinedOutput(); err != nil {
		t.Fatalf("mkimage: %v\n%s", err, out)
	}
	return tar
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func componentPids(c *Cluster) []string {
	files, _ := filepath.Glob(filepath.Join(c.Dir, "cluster", "run", "*.pid"))
	var pids []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		pids = append(pids, strings.TrimSpace(string(b)))
	}
	return pids
}

// rssMiB sums the resident memory of the cluster's components.
func rssMiB(c *Cluster) int {
	total := 0
	for _, pid := range componentPids(c) {
		st, _ := os.ReadFile(filepath.Join("/proc", pid, "status"))
		for _, l := range strings.Split(string(st), "\n") {
			var kb int
			if _, err := fmt.Sscanf(l, "VmRSS: %d kB", &kb); err == nil {
				total += kb
			}
		}
	}
	return total / 1024
}

// leftovers lists what of the cluster still exists: its components' processes, any process
// naming its dirs (shims, containers), mounts under its dirs, its network namespace, cgroups,
// the etcd data, the host kubeconfig and a pod bridge on the host.
func leftovers(c *Cluster, pids []string) []string {
	var left []string
	for _, pid := range pids {
		// A component killed by down may take a moment to be reaped by its new parent: a zombie
		// holds nothing, and a live one has 5 s to go.
		for i := 0; i < 50 && alive(pid); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			left = append(left, "component process "+pid)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, c.RunDir) || strings.Contains(cmd, filepath.Join(c.Dir, "cluster")) {
			left = append(left, fmt.Sprintf("process %s: %s", filepath.Base(filepath.Dir(p)), cmd))
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (strings.HasPrefix(f[4], c.RunDir) || strings.HasPrefix(f[4], c.Dir+"/") ||
			f[4] == "/run/netns/"+c.Netns) {
			left = append(left, "mount "+f[4])
		}
	}
	paths, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", c.Netns))
	paths = append(paths, "/run/netns/"+c.Netns, "/dev/shm/"+c.Netns+"-etcd", c.RunDir, c.Kubeconfig,
		filepath.Join(c.Dir, "cluster", "state"), "/sys/class/net/k8strial0")
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		}
	}
	return left
}

// alive reports a process that exists and is not a zombie.
func alive(pid string) bool {
	st, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
