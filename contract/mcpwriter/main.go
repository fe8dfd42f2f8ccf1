// Command mcpwriter is a stdio MCP server with one tool that writes a file: the kind of MCP server
// (a filesystem server) a user configures in Cline. The contract suite configures it in the
// user's Cline settings and checks that analysis runs neither offer nor run it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("mcpwriter", "1.0.0")
	s.AddTool(mcp.NewTool("write_file",
		mcp.WithDescription("Write content to a file"),
		mcp.WithString("path", mcp.Required()),
		mcp.WithString("content", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		path, _ := req.GetArguments()["path"].(string)
		content, _ := req.GetArguments()["content"].(string)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("wrote " + path), nil
	})
	if m := os.Getenv("MCPWRITER_MARK"); m != "" {
		// Proves the CLI started the server at all.
		_ = os.WriteFile(m, []byte(fmt.Sprint(os.Getpid())), 0o644)
	}
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
