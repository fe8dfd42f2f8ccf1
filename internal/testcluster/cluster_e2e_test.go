//go:build e2e && linux

package testcluster

import (
	"context"
	"fmt"
	"io"
	"os"
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

// TestClusterRunsPods: the node is Ready, a pod of a FROM-scratch image imported into the
// cluster's containerd runs to Succeeded and its log is read through the API; five pods in a row
// give the start latency (logged, not asserted), and the components' memory is logged.
func TestClusterRunsPods(t *testing.T) {
	c := Start(t)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
	defer cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	var lat []time.Duration
	for i := range 5 {
		start := time.Now()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "echo-"}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "main", Image: "k8s-trial.local/tool:1", ImagePullPolicy: corev1.PullNever,
				Args: []string{"echo", "hello", "from", "pod"}}},
		}}
		if pod, err = cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for {
			p, err := cs.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.Phase == corev1.PodSucceeded {
				break
			}
			if p.Status.Phase == corev1.PodFailed || ctx.Err() != nil {
				t.Fatalf("pod %d: %s %+v\nkubelet:\n%s", i, p.Status.Phase, p.Status, c.LogTail("kubelet", 30))
			}
			time.Sleep(50 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
		rc, err := cs.CoreV1().Pods(ns.Name).GetLogs(pod.Name, &corev1.PodLogOptions{}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if strings.TrimSpace(string(b)) != "hello from pod" {
			t.Errorf("pod log %q", b)
		}
	}
	slices.Sort(lat)
	t.Logf("cluster up (etcd to a Ready node) in %v", c.UpTime)
	t.Logf("pod create → Succeeded: median %v (min %v, max %v, n=5); components' RSS %d MiB", lat[2], lat[0], lat[4], rssMiB(c))
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rssMiB sums the resident memory of the cluster's components (by their pid files).
func rssMiB(c *Cluster) int {
	pids, _ := filepath.Glob(filepath.Join(c.Dir, "cluster", "run", "*.pid"))
	total := 0
	for _, f := range pids {
		b, _ := os.ReadFile(f)
		st, _ := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(b)), "status"))
		for _, l := range strings.Split(string(st), "\n") {
			var kb int
			if _, err := fmt.Sscanf(l, "VmRSS: %d kB", &kb); err == nil {
				total += kb
			}
		}
	}
	return total / 1024
}
