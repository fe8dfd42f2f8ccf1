package review

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	for in, want := range map[string][2]string{
		"": {Uncommitted, ""}, "uncommitted": {Uncommitted, ""}, "base:main": {Base, "main"},
		"base:origin/release-1.2": {Base, "origin/release-1.2"}, "commit:abc123": {Commit, "abc123"},
	} {
		k, r, err := ParseTarget(in)
		if err != nil || k != want[0] || r != want[1] {
			t.Errorf("ParseTarget(%q) = %q %q %v, want %v", in, k, r, err, want)
		}
	}
	for _, bad := range []string{"HEAD", "base:", "base:-x", "base:a..b", "base:a b", "commit:xyz", "commit:12", "uncommitted:x"} {
		if _, _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}

const patch = `diff --git a/app.go b/app.go
index 1111111..2222222 100644
--- a/app.go
+++ b/app.go
@@ -10,6 +10,8 @@ func main() {
 	a := 1
+	b := 2
+	c := 3
 	d := 4
@@ -40 +42 @@ func other() {
-	x()
+	y()
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
`

func TestHunksAndCheck(t *testing.T) {
	h := Hunks(patch)
	if got := h["app.go"]; len(got) != 2 || got[0] != [2]int{10, 17} || got[1] != [2]int{42, 42} {
		t.Fatalf("hunks of app.go: %v", got)
	}
	files := []FileStat{{Path: "app.go", Status: "M"}, {Path: "gone.txt", Status: "D"}}
	fs := []Finding{
		{File: "app.go", Line: 11}, {File: "app.go", Line: 30}, {File: "app.go", Line: 41, EndLine: 43},
		{File: "other.go", Line: 1}, {File: "gone.txt", Line: 1}, {File: "app.go"},
	}
	Check(fs, files, patch)
	want := []bool{false, true, false, true, false, false}
	for i, f := range fs {
		if f.OutsideDiff != want[i] {
			t.Errorf("finding %d %s:%d outsideDiff=%v, want %v", i, f.File, f.Line, f.OutsideDiff, want[i])
		}
	}
}

func TestParseFindings(t *testing.T) {
	answer := "Looks mostly fine.\n\n```json\n{\"summary\": \"one bug\", \"findings\": [" +
		`{"severity": "HIGH", "file": "/wt/root/app.go", "line": "12-14", "title": "nil deref", "detail": "x may be nil"},` +
		`{"severity": "urgent", "file": "./b/c.go", "detail": "odd severity\nsecond line"},` +
		`{"severity": "low", "file": "d.go"}` +
		"]}\n```\n"
	fs, summary, ok, warns := Parse(answer, "/wt/root")
	if !ok || summary != "one bug" || len(fs) != 2 {
		t.Fatalf("Parse: ok=%v summary=%q findings=%+v warns=%v", ok, summary, fs, warns)
	}
	if fs[0].Severity != High || fs[0].File != "app.go" || fs[0].Line != 12 || fs[0].Title != "nil deref" {
		t.Errorf("first finding %+v", fs[0])
	}
	if fs[1].Severity != Info || fs[1].File != "c.go" || fs[1].Title != "odd severity" {
		t.Errorf("second finding %+v", fs[1])
	}
	if len(warns) != 2 || !strings.Contains(strings.Join(warns, "|"), `"urgent"`) {
		t.Errorf("warnings %q", warns)
	}

	for _, bad := range []string{"No block at all.", "```json\n{\"findings\": [oops\n```", "```json\n{\"summary\": \"no findings key\"}\n```"} {
		if fs, _, ok, warns := Parse(bad, ""); ok || len(fs) != 0 || len(warns) != 1 {
			t.Errorf("Parse(%q) = %v %v %v, want not parsed with one warning", bad, fs, ok, warns)
		}
	}
	// The last block that parses wins; an empty list is a review without findings.
	fs, _, ok, _ = Parse("```json\n{\"findings\": [{\"title\": \"t\", \"detail\": \"d\"}]}\n```\nthen\n```json\n{\"findings\": []}\n```", "")
	if !ok || len(fs) != 0 {
		t.Errorf("last block: %v %v", ok, fs)
	}
}

func TestPromptCarriesTheChange(t *testing.T) {
	p := Prompt(Range{Target: "base:main", Base: strings.Repeat("a", 40), Head: strings.Repeat("b", 40),
		Files: []FileStat{{Path: "app.go", Status: "M", Added: 3, Deleted: 1}}, Patch: patch, Truncated: true}, "security", "be brief")
	for _, want := range []string{"merge base with main", "aaaaaaaaaaaa..bbbbbbbbbbbb", "+3 -1", "Focus of this review: security",
		"Instructions from the caller: be brief", "```json", "+\tb := 2", "The diff above was cut", "app.go (M, +3 -1)"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
}

func TestSeverityOrder(t *testing.T) {
	if !Critical.AtLeast(High) || Low.AtLeast(Medium) || !Info.AtLeast(Info) {
		t.Error("severity order")
	}
}

func TestSARIF(t *testing.T) {
	r := Report{Target: "base:main", Base: "a", Head: "b", Parsed: true, Summary: "s", Findings: []Finding{
		{Severity: High, File: "app.go", Line: 3, EndLine: 5, Title: "t", Detail: "d", Suggestion: "fix"},
		{Severity: Low, Title: "general"},
	}}
	b, err := SARIF(r, "v1")
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string           `json:"name"`
					Rules []map[string]any `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine, EndLine int }
					}
				}
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Tool.Driver.Rules) != 5 || len(log.Runs[0].Results) != 2 {
		t.Fatalf("sarif %s", b)
	}
	r0, r1 := log.Runs[0].Results[0], log.Runs[0].Results[1]
	if r0.RuleID != "review/high" || r0.Level != "error" || r0.Message.Text != "t: d\nSuggestion: fix" ||
		r0.Locations[0].PhysicalLocation.ArtifactLocation.URI != "app.go" || r0.Locations[0].PhysicalLocation.Region.EndLine != 5 {
		t.Errorf("first result %+v", r0)
	}
	if r1.Level != "note" || len(r1.Locations) != 0 {
		t.Errorf("second result %+v", r1)
	}
}
