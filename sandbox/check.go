package sandbox

// Check is one line of `cline-mcp doctor`: what was probed, whether it is fine, what was found
// and, when it is not fine, the fix. Each probe lives beside what it probes (the Docker engine in
// sandbox/docker, the cluster in sandbox/kubernetes, the Cline CLI and the analysis policy in
// bridge/run); the command collects and prints the lines. A failed Optional check is a warning:
// it does not change the doctor's exit status.
type Check struct {
	Name     string
	OK       bool
	Detail   string
	Fix      string
	Optional bool
}
