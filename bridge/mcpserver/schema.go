package mcpserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// The tools' contract has one source: the arguments and output structs below. Their advertised
// inputSchema and outputSchema are generated from them with jsonschema-go; what struct tags cannot
// say (enums, patterns, bounds, defaults) is filled in from the same Go constants the validator
// and the runner use. A field tagged tools:"a,b" belongs only to those tools' schemas.

// idPattern is the rule for provider and model ids, in the input schema and in the validator.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:/@-]{1,120}$`)

// thinkingLevel is a value of --thinking; its enum is cline.ThinkingLevels.
type thinkingLevel string

// arguments are the tool arguments. Fields without omitempty are required for every tool; cwd is
// also required for the tools whose toolSpec says cwdRequired.
type arguments struct {
	Prompt         string            `json:"prompt" jsonschema:"The task or question for Cline."`
	Cwd            string            `json:"cwd,omitempty"` // description per tool: cwdDescription
	Thinking       thinkingLevel     `json:"thinking,omitempty" jsonschema:"Reasoning effort passed to Cline as --thinking."`
	TimeoutSeconds int               `json:"timeoutSeconds,omitempty" jsonschema:"Deadline for one attempt; larger values are rejected, not clamped."`
	SystemPrompt   string            `json:"systemPrompt,omitempty" tools:"ask_cline" jsonschema:"Replaces Cline's system prompt (-s)."`
	Provider       string            `json:"provider,omitempty" jsonschema:"Provider id override (-P) for this call only; the user's saved settings never change."`
	Model          string            `json:"model,omitempty" jsonschema:"Model id override (-m) for this call only; the user's saved settings never change."`
	Isolation      sandbox.Isolation `json:"isolation,omitempty" jsonschema:"Ask for stronger isolation than the server's floor: docker runs Cline in a hardened container."`
	Target         string            `json:"target,omitempty" tools:"review_cline" jsonschema:"What to review: uncommitted (staged, unstaged and untracked files), base:<ref> (HEAD against its merge base with ref, e.g. base:main) or commit:<sha>."`
	Focus          string            `json:"focus,omitempty" tools:"review_cline" jsonschema:"What the review should look at hardest, in your words (security, concurrency, an adversarial stance...)."`
	SessionID      string            `json:"sessionId,omitempty" tools:"ask_cline,apply_cline_edits,ask_cline_workspace" jsonschema:"Continue the conversation of an earlier result's sessionId: Cline sees the earlier turns; the same tool, cwd and isolation (leave them out or give the same)."`
	Protocol       run.Protocol      `json:"protocol,omitempty" jsonschema:"How the server speaks to Cline for this call: acp (a conversation whose result carries a sessionId) or json (one-shot); default the server's --cline-protocol."`
	MaxCostUSD     float64           `json:"maxCostUsd,omitempty" jsonschema:"Stop Cline once this call has spent this many US dollars, as the CLI reports its cost while it runs; the result is then budget_exceeded and says what was spent. Default and ceiling: the server's --max-cost-usd."`
	MaxIterations  int               `json:"maxIterations,omitempty" jsonschema:"Stop Cline when it begins an iteration (one model call and its tool calls) past this many; budget_exceeded. Default and ceiling: the server's --max-iterations."`
	Background     bool              `json:"background,omitempty" jsonschema:"Run as a background job: the call returns a jobId at once; read progress and the result with cline_job. Without timeoutSeconds the job's own limits apply (far longer than 300 s)."`
}

// output is the structuredContent of every result, success and failure alike (the TypeScript SDK
// validates it even when isError is true), so only ok, warnings and attempts are required.
// structured (result.go) writes these keys in reading order; TestSchemaAgreement holds the two
// together.
type output struct {
	OK               bool                `json:"ok"`
	Text             string              `json:"text,omitempty"`
	Warnings         []string            `json:"warnings"`
	Attempts         int                 `json:"attempts"`
	ExitCode         *int                `json:"exitCode,omitempty"` // null when the process never ran or had no code
	Signal           *string             `json:"signal,omitempty"`
	DurationMs       int64               `json:"durationMs,omitempty"`
	Model            string              `json:"model,omitempty"`
	Usage            run.Usage           `json:"usage,omitzero"`
	Isolation        sandbox.Isolation   `json:"isolation,omitempty"`
	AttemptIsolation []sandbox.Isolation `json:"attemptIsolation,omitempty"`
	Enforcement      *run.Enforcement    `json:"enforcement,omitempty"`
	Kind             cline.Kind          `json:"kind,omitempty"`
	Message          string              `json:"message,omitempty"`
	Retryable        bool                `json:"retryable,omitempty"`
	ElapsedSeconds   float64             `json:"elapsedSeconds,omitempty"`
	StderrTail       string              `json:"stderrTail,omitempty"`
	StdoutTail       string              `json:"stdoutTail,omitempty"`

	Diff          string            `json:"diff,omitempty" tools:"apply_cline_edits"`
	DiffTruncated bool              `json:"diffTruncated,omitempty" tools:"apply_cline_edits"`
	ChangedFiles  []run.ChangedFile `json:"changedFiles,omitempty" tools:"apply_cline_edits"`
	HeadBefore    string            `json:"headBefore,omitempty" tools:"apply_cline_edits"`
	HeadAfter     string            `json:"headAfter,omitempty" tools:"apply_cline_edits"`
	Git           run.GitReport     `json:"git,omitzero" tools:"apply_cline_edits"`

	Worktree run.WorktreeReport `json:"worktree,omitzero" tools:"ask_cline_workspace,review_cline"`

	Review review.Report `json:"review,omitzero" tools:"review_cline"`

	SessionID         string          `json:"sessionId,omitempty"`
	Turn              int             `json:"turn,omitempty"`
	RejectedToolCalls []run.Rejection `json:"rejectedToolCalls,omitempty"`

	// Truncated is set by the MCP layer when the answer or the diff was cut to fit
	// --result-max-chars: the whole result is kept as a job, read in pages with cline_job.
	Truncated *truncation `json:"truncated,omitempty"`
}

// truncation says where the rest of a cut result is.
type truncation struct {
	JobID      string `json:"jobId"`
	Pages      int    `json:"pages"`
	TotalChars int    `json:"totalChars"`
}

// enumTypes gives the Go types whose values are a closed set their enum, from the Go constants.
func enumTypes() map[reflect.Type]*jsonschema.Schema {
	enum := func(vals ...any) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Enum: vals} }
	var kinds, isos, levels []any
	for _, k := range cline.Kinds {
		kinds = append(kinds, string(k))
	}
	for _, i := range sandbox.Isolations {
		isos = append(isos, string(i))
	}
	for _, l := range cline.ThinkingLevels {
		levels = append(levels, l)
	}
	var sevs []any
	for _, v := range review.Severities {
		sevs = append(sevs, string(v))
	}
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[cline.Kind]():        enum(kinds...),
		reflect.TypeFor[sandbox.Isolation](): enum(isos...),
		reflect.TypeFor[thinkingLevel]():     enum(levels...),
		reflect.TypeFor[run.Protocol]():      enum(string(run.ProtocolACP), string(run.ProtocolJSON)),
		reflect.TypeFor[review.Severity]():   enum(sevs...),
	}
}

// forTool generates the schema of T for one tool, leaving out the fields of other tools.
func forTool[T any](tool run.Tool) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: enumTypes()})
	if err != nil {
		return nil, err
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[T]()) {
		only, ok := f.Tag.Lookup("tools")
		if !ok || slices.Contains(strings.Split(only, ","), string(tool)) {
			continue
		}
		name := jsonName(f)
		delete(s.Properties, name)
		s.PropertyOrder = slices.DeleteFunc(s.PropertyOrder, func(p string) bool { return p == name })
		s.Required = slices.DeleteFunc(s.Required, func(p string) bool { return p == name })
	}
	return s, nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func cwdDescription(required bool) string {
	if required {
		return "Absolute path of the directory Cline works in (must be inside a git work tree)."
	}
	return "Absolute path of the directory Cline works in (default: the server's working directory)."
}

// buildInputSchema is spec's inputSchema: arguments plus the rules tags cannot carry.
func buildInputSchema(spec toolSpec) (*jsonschema.Schema, error) {
	s, err := forTool[arguments](spec.tool)
	if err != nil {
		return nil, err
	}
	p := s.Properties
	one := 1
	p["prompt"].MinLength = &one
	p["cwd"].MinLength = &one
	p["cwd"].Description = cwdDescription(spec.cwdRequired)
	if spec.cwdRequired {
		s.Required = append(s.Required, "cwd")
	}
	p["thinking"].Default = json.RawMessage(`"none"`)
	minT, maxT := float64(1), float64(MaxTimeoutSeconds)
	p["timeoutSeconds"].Minimum, p["timeoutSeconds"].Maximum = &minT, &maxT
	p["timeoutSeconds"].Default = json.RawMessage(fmt.Sprint(DefaultTimeoutSeconds))
	zero := float64(0)
	p["maxCostUsd"].ExclusiveMinimum = &zero
	p["maxIterations"].Minimum = &minT
	p["provider"].Pattern = idPattern.String()
	p["model"].Pattern = idPattern.String()
	if p["sessionId"] != nil {
		p["sessionId"].Pattern = sessions.IDPattern
	}
	if spec.tool == run.ReviewCline { // the review's task is built in; prompt adds to it
		s.Required = slices.DeleteFunc(s.Required, func(n string) bool { return n == "prompt" })
		p["prompt"].Description = "Extra instructions for the reviewer (optional)."
	}
	for _, name := range s.PropertyOrder {
		p[name].Description = withRules(p[name])
	}
	return s, nil
}

// withRules is the description of an input field with every rule of its schema that a client may
// strip before the model sees it (Codex drops minimum, maximum, default, pattern and minLength)
// spelled out, from the schema itself, so the two cannot disagree (TestDescriptionsCarryRules).
func withRules(f *jsonschema.Schema) string {
	var rules []string
	if f.MinLength != nil {
		rules = append(rules, fmt.Sprintf("at least %d character(s)", *f.MinLength))
	}
	if f.Minimum != nil && f.Maximum != nil {
		rules = append(rules, fmt.Sprintf("%g to %g", *f.Minimum, *f.Maximum))
	} else if f.Minimum != nil {
		rules = append(rules, fmt.Sprintf("at least %g", *f.Minimum))
	} else if f.ExclusiveMinimum != nil {
		rules = append(rules, fmt.Sprintf("more than %g", *f.ExclusiveMinimum))
	} else if f.Maximum != nil {
		rules = append(rules, fmt.Sprintf("at most %g", *f.Maximum))
	}
	if f.Pattern != "" {
		rules = append(rules, "matching "+f.Pattern)
	}
	if len(f.Enum) > 0 {
		var vals []string
		for _, v := range f.Enum {
			vals = append(vals, fmt.Sprint(v))
		}
		rules = append(rules, "one of "+strings.Join(vals, ", "))
	}
	if f.Default != nil {
		rules = append(rules, "default "+string(f.Default))
	}
	if len(rules) == 0 {
		return f.Description
	}
	return strings.TrimSpace(f.Description + " (" + strings.Join(rules, "; ") + ")")
}

// buildOutputSchema is tool's outputSchema. It stays open (no additionalProperties:false) so a
// client's validation does not turn a new result field into a failure, and its arrays are never
// null: structured writes empty arrays and encoding/json omits the empty nested ones (omitempty).
func buildOutputSchema(tool run.Tool) (*jsonschema.Schema, error) {
	s, err := forTool[output](tool)
	if err != nil {
		return nil, err
	}
	var open func(*jsonschema.Schema)
	open = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		if s.Properties != nil {
			s.AdditionalProperties = nil
		}
		switch {
		case slices.Equal(s.Types, []string{"null", "array"}):
			s.Type, s.Types = "array", nil
		case len(s.Types) == 2 && s.Types[0] == "null": // a pointer: null is the exception, named last
			s.Types = []string{s.Types[1], "null"}
		}
		open(s.Items)
		open(s.AdditionalProperties)
		for _, p := range s.Properties {
			open(p)
		}
	}
	open(s)
	return s, nil
}

// schemas holds every tool's generated schemas, built once at start.
var schemas = func() map[run.Tool]struct{ in, out *jsonschema.Schema } {
	m := map[run.Tool]struct{ in, out *jsonschema.Schema }{}
	for _, spec := range toolSpecs {
		in, err := buildInputSchema(spec)
		if err != nil {
			panic(fmt.Sprintf("inputSchema of %s: %v", spec.tool, err))
		}
		out, err := buildOutputSchema(spec.tool)
		if err != nil {
			panic(fmt.Sprintf("outputSchema of %s: %v", spec.tool, err))
		}
		m[spec.tool] = struct{ in, out *jsonschema.Schema }{in, out}
	}
	return m
}()

func mustJSON(s *jsonschema.Schema) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// inputSchema and outputSchema are what tools/list advertises for tool.
func inputSchema(tool run.Tool) json.RawMessage  { return mustJSON(schemas[tool].in) }
func outputSchema(tool run.Tool) json.RawMessage { return mustJSON(schemas[tool].out) }

// acceptedFields lists the arguments tool accepts, in schema order.
func acceptedFields(tool run.Tool) []string { return schemas[tool].in.PropertyOrder }

// requiresArg reports whether the input schema of tool requires the argument name.
func requiresArg(tool run.Tool, name string) bool {
	return slices.Contains(schemas[tool].in.Required, name)
}
