package main

import (
	"encoding/json"
	"maps"
	"strconv"
	"strings"
)

// reviewAttackScenarios are answers of a hostile review run: a prompt injection in the reviewed
// change makes the reviewer name files outside the repository, hoping the host, a CI system or
// a SARIF viewer opens, shows or links them. (This file sorts after scenarios.go, whose init
// makes the map this one adds to.)
var reviewAttackScenarios = map[string]scenarioDef{
	"review_hostile_paths": {doc: "answers a review with a findings block: first a legitimate finding (file= app.go, line= 5, title \"marker\"), then one per path outside the repository: .. escapes, absolute paths (the work dir's own climbing out too), file: and https: URIs, drive letters, backslashes, percent-escapes, NUL, control and bidi characters", run: runReviewHostilePaths},
}

func init() { maps.Copy(scenarios, reviewAttackScenarios) }

// hostileFindingPaths are the paths of the hostile findings; workDir is the run's -c.
func hostileFindingPaths(workDir string) []string {
	return []string{
		"../../../../etc/passwd", "/etc/shadow", "file:/etc/hosts", "file:///etc/hosts", "https://evil.example/app.go",
		`C:\Windows\win.ini`, "C:/Windows/win.ini", `..\..\..\etc\passwd`, "//evil.example/share/x", "%2e%2e/%2e%2e/etc/passwd",
		"..%2F..%2Fetc%2Fpasswd", "app.go\x00/../../../etc/passwd", "app\n/../../etc/passwd", "\u202eetc/passwd",
		strings.TrimSuffix(workDir, "/") + "/../../../../etc/passwd", "src/../../../etc/passwd", "..",
	}
}

func runReviewHostilePaths(s *session) int {
	line, _ := strconv.Atoi(s.param("line", "5"))
	findings := []map[string]any{{"severity": "high", "file": s.param("file", "app.go"), "line": line,
		"title": "marker", "detail": "the legitimate finding of the hostile answer"}}
	for i, p := range hostileFindingPaths(s.paths.workDir) {
		findings = append(findings, map[string]any{"severity": "low", "file": p, "line": 1,
			"title": "hostile " + strconv.Itoa(i), "detail": "a finding whose path leaves the repository"})
	}
	b, err := json.Marshal(map[string]any{"summary": "one real problem", "findings": findings})
	if err != nil {
		panic(err)
	}
	text := "Reviewed the change.\n\n```json\n" + string(b) + "\n```\n"
	return s.run(script{turns: []turn{textTurn(chunks(text, 64)...)}})
}
