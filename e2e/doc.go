// Package e2e is cline-mcp's product-level safety net: the built server driven over stdio by
// real MCP clients (mcp-go and the official TypeScript SDK), every scenario in host and Docker
// isolation against the fake Cline CLI and its image, a 50-call mixed load, a docker-compose
// smoke session, and leak checks (containers, worktrees, processes, settings copies). The tests
// carry the build tag e2e: `make e2e` (or `go test -tags e2e ./e2e/...`).
package e2e
