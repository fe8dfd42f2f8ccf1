//go:build e2e && linux

package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestCancelledRunChangesComeBack: what a cancelled run changed comes back, as from a stopped
// Docker container: the fake CLI edits a file, reports it, then waits for the model; the cancel
// stops its main container (the helper exec'd into it: SIGTERM to the wrapper, SIGINT to the program), the
// checkout comes back from the keeper with the file, the Exit says Stopped, and the pod is gone.
func TestCancelledRunChangesComeBack(t *testing.T) {
	e := clusterExecutor(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	var out, errb mcpsession.LockedBuffer
	// Each model call of the fake takes 8 s: the first asks for the edit, which the CLI makes and
	// reports; the cancel comes during the second.
	spec, _, _ := fakeSpec(work, "Create made.txt fake:edit?path=made.txt&content=made&delay_ms=8000")
	spec.StopGrace, spec.Stdout, spec.Stderr = 20*time.Second, &out, &errb
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		x   sandbox.Exit
		err error
	}
	done := make(chan result, 1)
	go func() { x, err := e.Run(ctx, spec); done <- result{x, err} }()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(out.String(), "made.txt") {
		if time.Now().After(deadline) {
			t.Fatalf("the run never wrote its file: stdout %q stderr %q", out.String(), errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	name := ""
	if list, _ := e.cs.CoreV1().Pods(e.cfg.Namespace).List(context.Background(), metav1.ListOptions{}); list != nil && len(list.Items) == 1 {
		name = list.Items[0].Name
	}
	cancel()
	stop := time.Now()
	r := <-done
	t.Logf("cancel to Run's return: %v", time.Since(stop))
	if r.err != nil || !r.x.Stopped {
		t.Errorf("got %+v, %v; want Stopped without an error (stderr %q)", r.x, r.err, errb.String())
	}
	if b, err := os.ReadFile(filepath.Join(work, "made.txt")); err != nil || !strings.HasPrefix(string(b), "made") {
		t.Errorf("the cancelled run's file did not come back: %q %v", b, err)
	}
	if name == "" {
		t.Fatal("the run's pod was not found")
	}
	if _, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod is still there: %v", err)
	}
}
