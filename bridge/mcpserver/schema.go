package mcpserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// The tools' contract has one source: the arguments and output structs (arguments in validate.go,
// jobArguments and sessionsArguments beside their handlers, output below). Their advertised
// inputSchema and outputSchema are generated from them with jsonschema-go; every call's arguments
// are decoded into the same struct by the rules its schema states (decode.go). What Go types
// cannot say comes from tags and Go constants: a field's rule tag sets its schema's minLength=N,
// min=N, max=N, gt=N (exclusiveMinimum), pattern=<a name in patterns> and default=V; enums come
// from the constants of the field's type (typeSchemas). A field tagged tools:"a,b" belongs only to
// those tools' schemas.

// idPattern is the rule for provider and model ids.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:/@-]{1,120}$`)

// patterns are the patterns a rule tag may name.
var patterns = map[string]string{"id": idPattern.String(), "session": sessions.IDPattern}

// output is the structuredContent of every result, success and failure alike (the TypeScript SDK
// validates it even when isError is true), so only ok, warnings and attempts are required.
// structured (result.go) writes these keys in reading order; TestSchemaAgreement holds the two
// together. The bookkeeping members (outline:"-") are left out of the advertised outputSchema,
// which stays open and says so in its description.
type output struct {
	OK               bool                `json:"ok"`
	Text             string              `json:"text,omitempty"`
	Warnings         []string            `json:"warnings"`
	Attempts         int                 `json:"attempts"`
	ExitCode         *int                `json:"exitCode,omitempty" outline:"-"` // null when the process never ran or had no code
	Signal           *string             `json:"signal,omitempty" outline:"-"`
	DurationMs       int64               `json:"durationMs,omitempty" outline:"-"`
	Model            string              `json:"model,omitempty" outline:"-"`
	Usage            run.Usage           `json:"usage,omitzero" outline:"-"`
	Isolation        sandbox.Isolation   `json:"isolation,omitempty" outline:"-"`
	AttemptIsolation []sandbox.Isolation `json:"attemptIsolation,omitempty" outline:"-"`
	Enforcement      *run.Enforcement    `json:"enforcement,omitempty" outline:"-"`
	Kind             cline.Kind          `json:"kind,omitempty" outline:"type"`
	Message          string              `json:"message,omitempty"`
	Retryable        bool                `json:"retryable,omitempty"`
	RetryAfter       int                 `json:"retryAfterSeconds,omitempty"`
	ElapsedSeconds   float64             `json:"elapsedSeconds,omitempty" outline:"-"`
	StderrTail       string              `json:"stderrTail,omitempty" outline:"-"`
	StdoutTail       string              `json:"stdoutTail,omitempty" outline:"-"`

	Diff          string            `json:"diff,omitempty" tools:"apply_cline_edits"`
	DiffTruncated bool              `json:"diffTruncated,omitempty" tools:"apply_cline_edits"`
	ChangedFiles  []run.ChangedFile `json:"changedFiles,omitempty" tools:"apply_cline_edits"`
	HeadBefore    string            `json:"headBefore,omitempty" tools:"apply_cline_edits" outline:"-"`
	HeadAfter     string            `json:"headAfter,omitempty" tools:"apply_cline_edits" outline:"-"`
	Git           run.GitReport     `json:"git,omitzero" tools:"apply_cline_edits"`

	Worktree run.WorktreeReport `json:"worktree,omitzero" tools:"ask_cline_workspace,review_cline"`

	Review review.Report `json:"review,omitzero" tools:"review_cline"`

	SessionID         string          `json:"sessionId,omitempty"`
	Turn              int             `json:"turn,omitempty" outline:"-"`
	RejectedToolCalls []run.Rejection `json:"rejectedToolCalls,omitempty" outline:"-"`

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

// typeSchemas gives the Go types whose values are a closed set their enum, from the Go
// constants, and a raw JSON result its type.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
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
		reflect.TypeFor[jobAction]():         enum(jobActions...),
		reflect.TypeFor[jobState]():          enum(jobs.Running, jobs.Succeeded, jobs.Failed, jobs.Cancelled),
		reflect.TypeFor[json.RawMessage]():   {Type: "object"},
	}
}

// forTool generates the schema of T for one tool, leaving out the fields of other tools.
func forTool[T any](tool run.Tool) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		return nil, err
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[T]()) {
		name := jsonName(f)
		if only, ok := f.Tag.Lookup("tools"); ok && !slices.Contains(strings.Split(only, ","), string(tool)) {
			delete(s.Properties, name)
			s.PropertyOrder = slices.DeleteFunc(s.PropertyOrder, func(p string) bool { return p == name })
			s.Required = slices.DeleteFunc(s.Required, func(p string) bool { return p == name })
		} else if rule, ok := f.Tag.Lookup("rule"); ok {
			if err := applyRule(s.Properties[name], f.Type.Kind(), rule); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return s, nil
}

// applyRule sets the keywords a rule tag names on p, the schema of a field of Go kind kind.
func applyRule(p *jsonschema.Schema, kind reflect.Kind, rule string) error {
	// The range of a sized integer type is the decoder's to check (as a type error), not a
	// bound to advertise.
	p.Minimum, p.Maximum = nil, nil
	for _, kv := range strings.Split(rule, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, numErr := strconv.ParseFloat(v, 64)
		switch {
		case k == "pattern" && patterns[v] != "":
			p.Pattern = patterns[v]
		case k == "default" && kind == reflect.String:
			p.Default = mustJSON(v)
		case k == "default" && numErr == nil:
			p.Default = json.RawMessage(v)
		case k == "minLength" && numErr == nil:
			p.MinLength = jsonschema.Ptr(int(n))
		case k == "min" && numErr == nil:
			p.Minimum = &n
		case k == "max" && numErr == nil:
			p.Maximum = &n
		case k == "gt" && numErr == nil:
			p.ExclusiveMinimum = &n
		default:
			return fmt.Errorf("bad rule %q", kv)
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func cwdDescription(required bool) string {
	if required {
		return "Absolute working directory, inside a git work tree."
	}
	return "Absolute working directory (default: the server's)."
}

// inputFor is tool's inputSchema, generated from its arguments struct T; adjust makes the changes
// of one tool that tags cannot say. Every description then spells out its field's rules.
func inputFor[T any](tool run.Tool, adjust func(*jsonschema.Schema)) (*jsonschema.Schema, error) {
	s, err := forTool[T](tool)
	if err != nil {
		return nil, err
	}
	if adjust != nil {
		adjust(s)
	}
	for _, name := range s.PropertyOrder {
		s.Properties[name].Description = withRules(s.Properties[name])
	}
	return s, nil
}

// buildInputSchema is a run tool's inputSchema: cwd is required by the tools that work in a
// checkout, and review_cline builds its own task, so its prompt is optional.
func buildInputSchema(spec toolSpec) (*jsonschema.Schema, error) {
	return inputFor[arguments](spec.tool, func(s *jsonschema.Schema) {
		s.Properties["cwd"].Description = cwdDescription(spec.cwdRequired)
		if spec.cwdRequired {
			s.Required = append(s.Required, "cwd")
		}
		if spec.tool == run.ReviewCline {
			s.Required = slices.DeleteFunc(s.Required, func(n string) bool { return n == "prompt" })
			s.Properties["prompt"].Description = "Extra instructions for the reviewer (optional)."
		}
	})
}

// withRules is the description of an input field with every rule of its schema that a client may
// strip before the model sees it (Codex drops minimum, maximum, default, pattern and minLength)
// spelled out, from the schema itself, so the two cannot disagree (TestDescriptionsCarryRules).
func withRules(f *jsonschema.Schema) string {
	var rules []string
	if f.MinLength != nil {
		rules = append(rules, atLeastChars(*f.MinLength))
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
		rules = append(rules, f.Pattern)
	}
	if len(f.Enum) > 0 && !namesAll(f.Description, f.Enum) {
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

// atLeastChars is the rule minLength n.
func atLeastChars(n int) string {
	if n == 1 {
		return "at least 1 character"
	}
	return fmt.Sprintf("at least %d characters", n)
}

// namesAll reports whether description already names every value as a word of its own.
func namesAll(description string, values []any) bool {
	words := strings.FieldsFunc(description, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	for _, v := range values {
		if !slices.Contains(words, fmt.Sprint(v)) {
			return false
		}
	}
	return true
}

// buildOutputSchema is tool's outputSchema. It stays open (no additionalProperties:false) so a
// client's validation does not turn a new result field into a failure, and its arrays are never
// null: structured writes empty arrays and encoding/json omits the empty nested ones (omitempty).
func buildOutputSchema[T any](tool run.Tool) (*jsonschema.Schema, error) {
	s, err := forTool[T](tool)
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
	leftOut := false
	for _, f := range reflect.VisibleFields(reflect.TypeFor[T]()) {
		name := jsonName(f)
		p := s.Properties[name]
		switch {
		case p == nil:
		case f.Tag.Get("outline") == "-":
			leftOut = true
			delete(s.Properties, name)
			s.PropertyOrder = slices.DeleteFunc(s.PropertyOrder, func(n string) bool { return n == name })
			s.Required = slices.DeleteFunc(s.Required, func(n string) bool { return n == name })
		case f.Tag.Get("outline") == "type":
			p.Enum = nil
		default:
			outline(p)
		}
	}
	if leftOut {
		s.Description = bookkeeping
	}
	return s, nil
}

// outline reduces the schema of a member of a result to its type: the members of an object,
// and of the objects of an array, are left open and undescribed, so that tools/list stays small
// (the model reads the result itself; docs describe every member). A field tagged
// outline:"type" keeps only its type (the failure kinds' enum is the output struct's).
func outline(p *jsonschema.Schema) {
	if p.Items != nil && p.Items.Properties != nil {
		p.Items = nil // an array of objects
	}
	if p.Properties != nil {
		p.Properties, p.PropertyOrder, p.Required, p.AdditionalProperties = nil, nil, nil, nil
		if slices.Equal(p.Types, []string{"object", "null"}) {
			p.Type, p.Types = "object", nil // written only when set (omitempty)
		}
	}
}

// bookkeeping is the description of an outputSchema that leaves the bookkeeping members out.
const bookkeeping = "Open: bookkeeping members (exit code, timings, usage, isolation) too."

type toolSchemas struct{ in, out *jsonschema.Schema }

// schemas holds every tool's generated schemas, built once at start.
var schemas = func() map[run.Tool]toolSchemas {
	m := map[run.Tool]toolSchemas{}
	add := func(tool run.Tool, in, out func() (*jsonschema.Schema, error)) {
		i, err := in()
		if err != nil {
			panic(fmt.Sprintf("inputSchema of %s: %v", tool, err))
		}
		o, err := out()
		if err != nil {
			panic(fmt.Sprintf("outputSchema of %s: %v", tool, err))
		}
		m[tool] = toolSchemas{i, o}
	}
	for _, spec := range toolSpecs {
		add(spec.tool, func() (*jsonschema.Schema, error) { return buildInputSchema(spec) },
			func() (*jsonschema.Schema, error) { return buildOutputSchema[output](spec.tool) })
	}
	add(jobTool, func() (*jsonschema.Schema, error) { return inputFor[jobArguments](jobTool, nil) },
		func() (*jsonschema.Schema, error) { return buildOutputSchema[jobOutput](jobTool) })
	add(sessionsTool, func() (*jsonschema.Schema, error) { return inputFor[sessionsArguments](sessionsTool, nil) },
		func() (*jsonschema.Schema, error) { return buildOutputSchema[sessionsOutput](sessionsTool) })
	return m
}()

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
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
