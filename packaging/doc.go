// Package packaging holds what the release ships besides the binary and checks it against the
// binary itself: the MCP Bundle manifest (mcpb/manifest.json, staged per platform by ./mcpb), the
// MCP Registry's server.json at the repository root, and the release configuration
// (.goreleaser.yaml). Its tests are the proof that they agree with the built server.
package packaging
