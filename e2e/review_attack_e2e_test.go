//go:build e2e

package e2e

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// hostilePathCount is how many hostile findings fake-cline's review_hostile_paths answers with.
const hostilePathCount = 17

// leakWords are parts of the hostile findings' paths: none may appear in the structured result,
// its warnings or the SARIF log.
var leakWords = []string{"passwd", "shadow", "/etc", "hosts", "win.ini", "Windows", "evil.example", "%2e", "%2F"}

// TestReviewHostilePathsDocker: a review run in a container answers with one legitimate finding
// (the marker: it comes through with its file and line) and 17 findings whose paths name
// something outside the repository — .. escapes, absolute paths, file: and https: URIs, drive
// letters, backslashes, percent-escapes, NUL and control characters. Through the MCP tool and
// through `cline-mcp review --format sarif`, the hostile findings keep their text but lose their
// location (pathDropped and a warning say so), and neither the result nor the SARIF log names a
// path outside the repository: every SARIF location is a relative URI inside it.
func TestReviewHostilePathsDocker(t *testing.T) {
	e := newDockerEnv(t)
	dirtyCheckout(t, e.work)
	sc, _ := dockerCall(e, "review_cline", map[string]any{"prompt": "fake:review_hostile_paths"})
	wantDockerOK(t, sc)
	rv, _ := sc["review"].(map[string]any)
	fs, _ := rv["findings"].([]any)
	if len(fs) != 1+hostilePathCount {
		t.Fatalf("%d findings, want %d: %v", len(fs), 1+hostilePathCount, rv)
	}
	if f := fs[0].(map[string]any); f["file"] != "app.go" || f["line"] != float64(5) || f["title"] != "marker" {
		t.Fatalf("the legitimate finding did not come through: %v", f)
	}
	for _, x := range fs[1:] {
		f := x.(map[string]any)
		if f["file"] != "" || f["line"] != nil || f["pathDropped"] == nil || !strings.HasPrefix(f["title"].(string), "hostile ") {
			t.Errorf("hostile finding %v", f)
		}
	}
	delete(sc, "text") // Cline's own words, quoted as they are
	b, _ := json.Marshal(sc)
	for _, w := range leakWords {
		if strings.Contains(string(b), w) {
			t.Errorf("the result names %q: %s", w, b)
		}
	}

	sarifPath := filepath.Join(e.root, "review.sarif")
	argv, environ := e.server(nil)
	cmd := exec.Command(bins.ClineMCP, append(append([]string{"review"}, argv...), "--isolation", "docker", "--docker-image", mcpsession.FakeImage,
		"--docker-network", "none", "--cwd", e.work, "--prompt", "fake:review_hostile_paths", "--format", "sarif", "--out", sarifPath)...)
	cmd.Env, cmd.Dir = environ, e.work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cline-mcp review: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(sarifPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range leakWords {
		if strings.Contains(string(raw), w) {
			t.Errorf("the SARIF log names %q", w)
		}
	}
	var log struct {
		Version string
		Runs    []struct {
			Results []struct {
				Locations []struct {
					PhysicalLocation struct{ ArtifactLocation struct{ URI string } }
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 1+hostilePathCount {
		t.Fatalf("SARIF %v: %s", err, raw)
	}
	var uris []string
	for _, r := range log.Runs[0].Results {
		for _, l := range r.Locations {
			u := l.PhysicalLocation.ArtifactLocation.URI
			pu, err := url.Parse(u)
			if err != nil || pu.Scheme != "" || pu.Host != "" || pu.Opaque != "" || strings.HasPrefix(pu.Path, "/") || path.Clean(pu.Path) != pu.Path || strings.HasPrefix(pu.Path, "..") {
				t.Errorf("SARIF location %q is not a relative URI inside the repository", u)
			}
			uris = append(uris, u)
		}
	}
	if len(uris) != 1 || uris[0] != "app.go" {
		t.Errorf("SARIF locations %q, want only app.go", uris)
	}
}
