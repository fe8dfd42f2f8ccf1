package main

import "strings"

// policyMarker starts the block cline-mcp appends to every prompt (both engines): what the run's
// policy allows.
const policyMarker = "\n\nPolicy for this run"

// taskOf is a prompt without the policy block: what the scenarios (echo above all) answer to.
// The session's transcript keeps the whole text, as the real CLI does.
func taskOf(prompt string) string {
	task, _, _ := strings.Cut(prompt, policyMarker)
	return task
}

// policyOf is the policy block of a prompt ("" when there is none).
func policyOf(prompt string) string {
	if i := strings.Index(prompt, policyMarker); i >= 0 {
		return prompt[i+2:]
	}
	return ""
}

func init() {
	// instructions answers with the policy block the prompt carried: what the agent was told.
	acpScenarios["instructions"] = func(r *acpRun) []turn {
		return []turn{textTurn("INSTRUCTIONS:\n" + policyOf(r.full))}
	}
}
