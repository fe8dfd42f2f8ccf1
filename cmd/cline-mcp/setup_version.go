package main

import "runtime/debug"

// buildVersion is the version cline-mcp reports: the one the linker stamped (make build:
// -X main.version, goreleaser: the release tag), else the module version the go command recorded
// when it was built with `go install github.com/cline-mcp/cline-mcp/cmd/cline-mcp@<version>`,
// else "dev" (a build from a checkout records "(devel)").
func buildVersion(stamped string, info *debug.BuildInfo, ok bool) string {
	if stamped != "" && stamped != "dev" {
		return stamped
	}
	if ok && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// currentVersion is buildVersion of this binary.
func currentVersion() string {
	info, ok := debug.ReadBuildInfo()
	return buildVersion(version, info, ok)
}
