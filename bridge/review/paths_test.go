package review

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"testing"
)

// hostilePaths are paths an answer may give that name something outside the repository (or
// would, once a SARIF viewer decodes or resolves them). Each must lose its location.
var hostilePaths = []string{
	"../../../../etc/passwd", "/etc/shadow", "file:/etc/hosts", "file:///etc/hosts", "https://evil.example/x.go",
	"C:/Windows/win.ini", `C:\Windows\win.ini`, `..\..\..\etc\passwd`, `\\server\share\x`, "//server/share/x",
	"a/../../x", "..", "../", "./../x", "src/../../x", "%2e%2e/%2e%2e/etc/passwd", "..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd",
	"app.go\x00/../../etc/passwd", "app\n.go", "app\r.go", "app\x1b[31m.go", "\u202egpj.exe", "/wt/root/../../etc/passwd",
	"/wt/rootx/app.go", "/wt/root", "/wt/root/", "/wt/root/x/../..", "javascript:alert(1)", "data:text/plain,x",
	strings.Repeat("a/", 2100) + "x",
}

// TestSafePathRejectsEscapes: every hostile path loses its location, with a reason that does
// not repeat the path; safe paths come out repository-relative and clean.
func TestSafePathRejectsEscapes(t *testing.T) {
	// Invalid UTF-8 cannot come through JSON (it decodes as U+FFFD), only through a Report.
	for _, p := range append(hostilePaths, "\xff\xfe.go") {
		safe, why := SafePath(p, "/wt/root")
		if safe != "" || why == "" {
			t.Errorf("SafePath(%q) = %q, %q; want it dropped with a reason", p, safe, why)
		}
		if strings.Contains(why, "etc") || strings.Contains(why, "passwd") {
			t.Errorf("the reason for %q quotes the path: %q", p, why)
		}
	}
	for in, want := range map[string]string{
		"app.go": "app.go", "./src/x.go": "src/x.go", "/wt/root/src/x.go": "src/x.go", `src\win\x.go`: "src/win/x.go",
		"b/app.go": "app.go", "src/./a//b.go": "src/a/b.go", "src/sub/../x.go": "src/x.go", " app.go ": "app.go",
		"100%.txt": "100%.txt", "dir/a:b.go": "dir/a:b.go", "my file#1?.go": "my file#1?.go", "": "",
	} {
		if got, why := SafePath(in, "/wt/root/"); got != want || why != "" {
			t.Errorf("SafePath(%q) = %q, %q; want %q", in, got, why, want)
		}
	}
}

// TestParseDropsHostileLocations: an answer whose findings name paths outside the repository
// keeps those findings' text but not their paths or lines, says so in a warning and in the
// finding, and the SARIF log made of them has only relative URIs inside the repository. The
// first finding is a legitimate one that must come through (the marker: the table ran).
func TestParseDropsHostileLocations(t *testing.T) {
	items := []string{`{"severity": "high", "file": "src/ok.go", "line": 3, "title": "marker", "detail": "legit"}`}
	for i, p := range hostilePaths {
		b, _ := json.Marshal(p)
		items = append(items, fmt.Sprintf(`{"severity": "low", "file": %s, "line": 7, "title": "hostile %d", "detail": "d"}`, b, i))
	}
	answer := "x\n```json\n{\"findings\": [" + strings.Join(items, ",") + "]}\n```\n"
	fs, _, ok, warns := Parse(answer, "/wt/root")
	if !ok || len(fs) != 1+len(hostilePaths) {
		t.Fatalf("Parse: ok=%v, %d findings, warnings %q", ok, len(fs), warns)
	}
	if fs[0].File != "src/ok.go" || fs[0].Line != 3 || fs[0].PathDropped != "" {
		t.Fatalf("the legitimate finding did not come through: %+v", fs[0])
	}
	for i, f := range fs[1:] {
		if f.File != "" || f.Line != 0 || f.PathDropped == "" || f.Title != fmt.Sprintf("hostile %d", i) {
			t.Errorf("finding for %q: %+v", hostilePaths[i], f)
		}
	}
	if len(warns) != len(hostilePaths) {
		t.Errorf("%d warnings for %d dropped paths: %q", len(warns), len(hostilePaths), warns)
	}
	out, err := json.Marshal(map[string]any{"findings": fs, "warnings": warns})
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"etc", "passwd", "shadow", "hosts", "Windows", "evil", "server"} {
		if strings.Contains(string(out), leak) {
			t.Errorf("the result names %q: %s", leak, out)
		}
	}
	// SARIF of the parsed findings, and of a report built by hand with the raw hostile paths.
	raw := append([]Finding(nil), fs...)
	for i := range hostilePaths {
		raw[i+1].File, raw[i+1].Line = hostilePaths[i], 7
	}
	for _, r := range []Report{{Findings: fs}, {Findings: raw}} {
		uris := sarifURIs(t, r)
		if len(uris) != 1 || uris[0] != "src/ok.go" {
			t.Errorf("SARIF locations %q, want only src/ok.go", uris)
		}
	}
}

// TestSARIFURIsAreRelativeReferences: a safe path with characters URIs reserve is written
// percent-encoded, and decodes back to the same repository-relative path.
func TestSARIFURIsAreRelativeReferences(t *testing.T) {
	names := []string{"my file#1?.go", "100%.txt", "dir/a:b.go", "ünï/cödé.go"}
	var fs []Finding
	for _, n := range names {
		fs = append(fs, Finding{Severity: Low, File: n, Title: "t"})
	}
	uris := sarifURIs(t, Report{Findings: fs})
	if len(uris) != len(names) {
		t.Fatalf("URIs %q", uris)
	}
	for i, u := range uris {
		if p, err := url.PathUnescape(u); err != nil || p != names[i] {
			t.Errorf("URI %q decodes to %q (%v), want %q", u, p, err, names[i])
		}
	}
}

// sarifURIs validates the SARIF log of r — version, one run, results with rule ids and levels,
// each artifact URI a relative reference without scheme, host, query or fragment that stays
// inside the repository once decoded — and returns the URIs.
func sarifURIs(t *testing.T, r Report) []string {
	t.Helper()
	b, err := SARIF(r, "test")
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region *struct{ StartLine, EndLine int } `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != len(r.Findings) {
		t.Fatalf("SARIF %v: %s", err, b)
	}
	var uris []string
	for _, res := range log.Runs[0].Results {
		if !strings.HasPrefix(res.RuleID, "review/") || res.Level == "" || res.Message.Text == "" {
			t.Errorf("result %+v", res)
		}
		for _, l := range res.Locations {
			u := l.PhysicalLocation.ArtifactLocation.URI
			pu, err := url.Parse(u)
			if err != nil || pu.Scheme != "" || pu.Host != "" || pu.RawQuery != "" || pu.Fragment != "" || pu.Opaque != "" {
				t.Errorf("URI %q is not a plain relative reference (%v)", u, err)
				continue
			}
			dec := pu.Path
			if c := path.Clean(dec); dec == "" || strings.HasPrefix(dec, "/") || c != dec || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsAny(dec, "\\\x00") {
				t.Errorf("URI %q leaves the repository or is not clean", u)
			}
			uris = append(uris, u)
		}
	}
	return uris
}
