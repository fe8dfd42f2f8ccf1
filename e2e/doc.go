// Package e2e is cline-mcp's product-level safety net: the built server driven over stdio by
// real MCP clients. Two tiers share one TestMain (harness_test.go builds the binaries once):
//
//   - the host tier, without a build tag (`go test ./e2e/`, part of `go test ./...`): every
//     tool, error kind, cancel, crash, settings merge, redaction, git guard and pool behaviour
//     of the server against the fake Cline CLI on the host, through internal/mcpsession;
//   - the Docker tier, behind the build tag e2e (`make e2e`, or `go test -tags e2e ./e2e/...`):
//     the same server in Docker isolation against the fake CLI's image (escapes, egress, other
//     engines), every scenario in host and Docker isolation, the official TypeScript SDK and
//     Claude Code as clients, a 50-call mixed load, a docker-compose smoke session, and leak
//     checks (containers, worktrees, processes, settings copies).
package e2e
