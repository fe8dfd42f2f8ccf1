package review

import "encoding/json"

// SARIF is the report as a SARIF 2.1.0 log (what GitHub code scanning, GitLab and most CI systems
// show as annotations): one result per finding, its level from the severity (critical and high:
// error; medium: warning; low and info: note), its location the file and lines in the reviewed
// head as a relative URI reference (percent-encoded segments; a finding without a safe
// repository-relative path has no location); rules are the five severities.
func SARIF(r Report, toolVersion string) ([]byte, error) {
	type region struct {
		StartLine int `json:"startLine"`
		EndLine   int `json:"endLine,omitempty"`
	}
	type physical struct {
		ArtifactLocation struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
		Region *region `json:"region,omitempty"`
	}
	type location struct {
		PhysicalLocation physical `json:"physicalLocation"`
	}
	type message struct {
		Text string `json:"text"`
	}
	type result struct {
		RuleID     string         `json:"ruleId"`
		Level      string         `json:"level"`
		Message    message        `json:"message"`
		Locations  []location     `json:"locations,omitempty"`
		Properties map[string]any `json:"properties"`
	}
	type rule struct {
		ID               string  `json:"id"`
		ShortDescription message `json:"shortDescription"`
	}
	rules := make([]rule, 0, len(Severities))
	for _, s := range Severities {
		rules = append(rules, rule{ID: ruleID(s), ShortDescription: message{Text: "A " + string(s) + " finding of the review"}})
	}
	results := make([]result, 0, len(r.Findings))
	for _, f := range r.Findings {
		text := f.Title
		if f.Detail != "" {
			text += ": " + f.Detail
		}
		if f.Suggestion != "" {
			text += "\nSuggestion: " + f.Suggestion
		}
		res := result{RuleID: ruleID(f.Severity), Level: level(f.Severity), Message: message{Text: text},
			Properties: map[string]any{"severity": f.Severity, "title": f.Title, "outsideDiff": f.OutsideDiff}}
		// The path is checked again here (a Report may come from elsewhere than Parse): a
		// location is only ever a relative URI inside the repository.
		if safe, _ := SafePath(f.File, ""); safe != "" && safe == f.File {
			var p physical
			p.ArtifactLocation.URI = uriOf(safe)
			if f.Line > 0 {
				p.Region = &region{StartLine: f.Line, EndLine: max(f.EndLine, f.Line)}
			}
			res.Locations = []location{{PhysicalLocation: p}}
		}
		results = append(results, res)
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name": "cline-mcp review_cline", "version": toolVersion,
				"informationUri": "https://github.com/cline-mcp/cline-mcp", "rules": rules,
			}},
			"results": results,
			// executionSuccessful says whether the review reached a verdict: an answer without a
			// findings block that parsed is no verdict, whatever its results say.
			"invocations": []any{map[string]any{"executionSuccessful": r.Parsed}},
			"properties": map[string]any{"target": r.Target, "base": r.Base, "head": r.Head,
				"summary": r.Summary, "findingsParsed": r.Parsed},
		}},
	}
	return json.MarshalIndent(log, "", "  ")
}

func ruleID(s Severity) string { return "review/" + string(s) }

func level(s Severity) string {
	switch s {
	case Critical, High:
		return "error"
	case Medium:
		return "warning"
	}
	return "note"
}
