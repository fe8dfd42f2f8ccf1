//go:build tools

// Package deps pins modules that parts of the tree import behind build tags or that are being
// brought in, so that `go mod tidy` keeps them. It is never built.
package deps

import (
	_ "github.com/mark3labs/mcp-go/client"
	_ "github.com/mark3labs/mcp-go/server"
	_ "github.com/moby/moby/api/types/container"
	_ "github.com/moby/moby/client"
	_ "github.com/spf13/afero"
	_ "github.com/testcontainers/testcontainers-go"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/sys/windows"
)
