//go:build unix

package host

import (
	"os/exec"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// BenchmarkTrue compares one executor Run of true(1) with a bare exec.Command(...).Run(): the
// difference is the executor's overhead (two pipes, pumps, waitid, group kill).
func BenchmarkTrue(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skipf("no true(1): %v", err)
	}
	b.Run("executor", func(b *testing.B) {
		e := New()
		spec := sandbox.Spec{Path: path, Env: []string{}}
		for b.Loop() {
			x, err := e.Run(b.Context(), spec)
			if err != nil || x.Code != 0 {
				b.Fatalf("Run: %+v, %v", x, err)
			}
		}
	})
	b.Run("exec.Command", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(path)
			cmd.Env = []string{}
			if err := cmd.Run(); err != nil {
				b.Fatalf("Run: %v", err)
			}
		}
	})
}
