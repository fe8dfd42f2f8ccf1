// Package tools pins the programs and data the release pipeline uses, apart from the product's
// go.mod: goreleaser and cyclonedx-gomod as tool dependencies (go tool -modfile=tools/go.mod …),
// and the MCP Registry's module, whose published server.json schemas
// (internal/validators/schemas/<date>.json) packaging's tests validate server.json against.
package tools

import _ "github.com/modelcontextprotocol/registry/pkg/model" // pins the registry's module and its schemas
