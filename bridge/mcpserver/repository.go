package mcpserver

import (
	"maps"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// repositorySchema is the HTTP service's "repository" argument: the repository a call works in
// when the caller and the service share no file system (bridge/service.Repositories).
func repositorySchema() *jsonschema.Schema {
	hex := `^([0-9a-f]{40}|[0-9a-f]{64})$`
	return &jsonschema.Schema{
		Type: "object",
		Description: "Instead of cwd (HTTP service only): the repository the service checks out for this call, " +
			"{url, commit} (fetched over https) or {bundle, commit} (a base64 git bundle holding the commit). No sessionId with it.",
		Properties: map[string]*jsonschema.Schema{
			"url":      {Type: "string", Description: "https:// URL of the repository, without credentials."},
			"commit":   {Type: "string", Pattern: hex, Description: "Full commit id to check out (" + hex + ")."},
			"bundle":   {Type: "string", Description: "Base64 of a complete git bundle (git bundle create - HEAD | base64) holding the commit."},
			"snapshot": {Type: "string", Pattern: hex, Description: "With a bundle: a commit of it whose tree becomes the checkout's uncommitted changes on top of commit."},
		},
		PropertyOrder:        []string{"url", "commit", "bundle", "snapshot"},
		Required:             []string{"commit"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// AcceptRepository advertises "repository" beside cwd on every run tool that takes a cwd, cwd
// then no longer required (one of the two is). Only the HTTP service calls it, before
// HTTPHandler, with bridge/service.Repositories in front: that turns the argument into a cwd
// before a call reaches the tools, so the tools themselves never read it (a call that reached
// them with it is refused as an unknown argument). The stdio tools are unchanged.
func (s *Server) AcceptRepository() {
	for _, spec := range toolSpecs {
		in := schemas[spec.tool].in
		if in.Properties["cwd"] == nil {
			continue
		}
		ext := *in
		ext.Properties = maps.Clone(in.Properties)
		ext.Properties["repository"] = repositorySchema()
		ext.PropertyOrder = append(slices.Clone(in.PropertyOrder), "repository")
		ext.Required = slices.DeleteFunc(slices.Clone(in.Required), func(n string) bool { return n == "cwd" })
		t := spec.mcpTool()
		t.RawInputSchema = mustJSON(&ext)
		s.mcp.AddTool(withSearchHint(t), s.handler(spec.tool))
	}
}
