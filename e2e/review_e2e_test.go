//go:build e2e

package e2e

import (
	"fmt"
	"testing"
)

// TestReviewDocker: review_cline in a container reviews the uncommitted work from a worktree of
// the snapshot (mounted as for ask_cline_workspace), reports what was enforced, and leaves
// the checkout as it was.
func TestReviewDocker(t *testing.T) {
	e := newDockerEnv(t)
	dirtyCheckout(t, e.work)
	before := checkoutState(t, e.work)
	block := `{"summary": "s", "findings": [{"severity": "high", "file": "app.go", "line": 5, "title": "t", "detail": "d"}]}`
	sc, _ := dockerCall(e, "review_cline", map[string]any{"prompt": reviewAnswer(block)})
	wantDockerOK(t, sc)
	rv, _ := sc["review"].(map[string]any)
	if rv == nil || rv["parsed"] != true || len(rv["findings"].([]any)) != 1 {
		t.Fatalf("review %v", rv)
	}
	if enf, _ := sc["enforcement"].(map[string]any); enf["isolation"] != "docker" {
		t.Errorf("enforcement %v", enf)
	}
	if after := checkoutState(t, e.work); after != before {
		t.Errorf("the checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if wt, _ := sc["worktree"].(map[string]any); wt["removed"] != true {
		t.Errorf("worktree %v", fmt.Sprint(wt))
	}
}
