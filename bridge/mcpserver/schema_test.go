package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	gschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// compile turns an advertised schema into a validator a client would build from it.
func compile(t *testing.T, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func schemaAccepts(t *testing.T, s *jsonschema.Schema, v any) error {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

func strs[T ~string](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// TestSchemaAgreementInput: the advertised inputSchema, the validator and the Go constants say the
// same thing about every argument — fields, required ones, enums, pattern and bounds — and for a
// table of structural cases a client's schema validation and the validator agree.
func TestSchemaAgreementInput(t *testing.T) {
	patterns := map[string]string{"provider": idPattern.String(), "model": idPattern.String(), "sessionId": sessions.IDPattern}
	cwd := t.TempDir()
	v := testValidator("linux", sandbox.IsolationHost)
	for _, spec := range toolSpecs {
		t.Run(string(spec.tool), func(t *testing.T) {
			in := schemas[spec.tool].in
			if in.AdditionalProperties == nil || in.AdditionalProperties.Not == nil {
				t.Errorf("inputSchema must say additionalProperties:false")
			}
			base := func() map[string]any { return map[string]any{"prompt": "hi there", "cwd": cwd} }

			// Enums: exactly the Go constants, and each is accepted by the validator.
			enums := map[string][]any{"thinking": strs(cline.ThinkingLevels), "isolation": strs(sandbox.Isolations),
				"protocol": {string(run.ProtocolACP), string(run.ProtocolJSON)}}
			for name, p := range in.Properties {
				want, ok := enums[name]
				if !ok {
					if p.Enum != nil {
						t.Errorf("%s: enum %v comes from no Go constant this test knows", name, p.Enum)
					}
					continue
				}
				if !reflect.DeepEqual(p.Enum, want) {
					t.Errorf("%s: schema enum %v, Go constants %v", name, p.Enum, want)
				}
				for _, val := range p.Enum {
					a := base()
					a[name] = val
					if _, err := v.call(spec.tool, a); err != nil {
						t.Errorf("%s=%v is in the schema's enum but the validator says %v", name, val, err)
					}
				}
				a := base()
				a[name] = "bogus"
				if _, err := v.call(spec.tool, a); err == nil || !strings.Contains(err.Error(), name+" must be") {
					t.Errorf("%s=bogus: validator says %v, want a rejection naming the field", name, err)
				}
			}

			// Patterns: the validator's, and enforced by it with the pattern in its message.
			for name, p := range in.Properties {
				if p.Pattern == "" {
					continue
				}
				if want := patterns[name]; p.Pattern != want {
					t.Errorf("%s: schema pattern %q, validator's %q", name, p.Pattern, want)
				}
				a := base()
				a[name] = "has space"
				if _, err := v.call(spec.tool, a); err == nil || !strings.Contains(err.Error(), p.Pattern) {
					t.Errorf("%s: validator says %v, want a rejection quoting %s", name, err, p.Pattern)
				}
			}

			// Fields: the validator accepts exactly the schema's properties, and requires exactly
			// the schema's required ones.
			if got := slices.Sorted(func(yield func(string) bool) {
				for k := range in.Properties {
					if !yield(k) {
						return
					}
				}
			}); !slices.Equal(got, slices.Sorted(slices.Values(acceptedFields(spec.tool)))) {
				t.Errorf("properties %v, validator accepts %v", got, acceptedFields(spec.tool))
			}
			a := base()
			a["promt"] = "typo"
			if _, err := v.call(spec.tool, a); err == nil || !strings.Contains(err.Error(), `unknown argument "promt"`) {
				t.Errorf("unknown argument: validator says %v", err)
			}
			for _, name := range acceptedFields(spec.tool) {
				a := base()
				delete(a, name)
				_, err := v.call(spec.tool, a)
				if required := slices.Contains(in.Required, name); required != (err != nil) {
					t.Errorf("without %s: required in schema %v, validator says %v", name, required, err)
				} else if err != nil && !strings.Contains(err.Error(), name+" is required") {
					t.Errorf("without %s: %v does not name the field and the rule", name, err)
				}
			}

			// Bounds.
			tp := in.Properties["timeoutSeconds"]
			if tp.Minimum == nil || tp.Maximum == nil || *tp.Maximum != MaxTimeoutSeconds {
				t.Fatalf("timeoutSeconds bounds: %+v", tp)
			}
			for n, ok := range map[float64]bool{*tp.Minimum: true, *tp.Maximum: true, *tp.Minimum - 1: false, *tp.Maximum + 1: false} {
				a := base()
				a["timeoutSeconds"] = n
				if _, err := v.call(spec.tool, a); (err == nil) != ok {
					t.Errorf("timeoutSeconds=%v: validator says %v, want accepted=%v", n, err, ok)
				}
			}
			if def := string(tp.Default); def != fmt.Sprint(DefaultTimeoutSeconds) {
				t.Errorf("timeoutSeconds default %s, validator's %d", def, DefaultTimeoutSeconds)
			}
			if call, _ := v.call(spec.tool, base()); string(in.Properties["thinking"].Default) != `"`+call.Thinking+`"` {
				t.Errorf("thinking default %s, validator's %q", in.Properties["thinking"].Default, call.Thinking)
			}

			// Structural cases: what a client's schema validation decides, the validator decides.
			s := compile(t, inputSchema(spec.tool))
			with := func(k string, val any) map[string]any { a := base(); a[k] = val; return a }
			cases := []map[string]any{
				base(), {"prompt": "hi there"}, {"cwd": cwd}, {},
				with("prompt", ""), with("prompt", 3), with("cwd", ""), with("cwd", true),
				with("thinking", "high"), with("thinking", ""), with("thinking", "HIGH"), with("thinking", 2),
				with("timeoutSeconds", 1.5), with("timeoutSeconds", "60"), with("timeoutSeconds", 60.0),
				with("systemPrompt", "be brief"), with("systemPrompt", 1),
				with("provider", "anthropic"), with("provider", ""), with("provider", strings.Repeat("p", 121)),
				with("model", "claude-sonnet-4.5@x:y/z"), with("model", "a b"), with("model", nil),
				with("isolation", "docker"), with("isolation", "vm"), with("isolation", nil),
				with("extra", 1),
				with("maxCostUsd", 0.5), with("maxCostUsd", 0.0), with("maxCostUsd", -1.0), with("maxCostUsd", "1"),
				with("maxIterations", 3.0), with("maxIterations", 0.0), with("maxIterations", 2.5), with("maxIterations", true),
			}
			for _, c := range cases {
				_, verr := v.call(spec.tool, c)
				serr := schemaAccepts(t, s, c)
				if (verr == nil) != (serr == nil) {
					t.Errorf("%v: validator says %v, schema says %v", c, verr, serr)
				}
			}
		})
	}
}

// samples are results covering every output field: a full success of each tool and, for each
// tool, a failure of every kind.
func samples() map[run.Tool][]run.Result {
	code, sig, diff := 1, "SIGTERM", "diff --git a/x b/x\n"
	files := []run.ChangedFile{{Path: "y", OldPath: "x", Status: "R"}}
	git := &run.GitReport{HeadBefore: "a", HeadAfter: "b", RefBefore: "refs/heads/m", RefAfter: "refs/heads/m",
		NewRefs: map[string]string{"refs/tags/t": "b"}, ChangedRefs: map[string]string{"refs/heads/m": "b"},
		DeletedRefs: []string{"refs/heads/old"}, ChangedFiles: files, WorkingTree: true, UndoHint: "git reset --soft a", Error: "e"}
	wt := &run.WorktreeReport{Commit: "a", Reused: true, Pooled: true, Kept: true, Path: "/w", Touched: files}
	full := func(tool run.Tool) run.Result {
		r := run.Result{OK: true, Text: "answer", Warnings: []string{"w"}, Attempts: 2, ExitCode: &code, Signal: &sig,
			Duration: 1.5, Model: "m", Usage: &run.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, TotalCost: 0.5},
			Isolation: sandbox.IsolationDocker, AttemptIsolation: []sandbox.Isolation{sandbox.IsolationHost, sandbox.IsolationDocker},
			SessionID: "1796278600502_lmK-X_cli", Turn: 2, Rejected: []run.Rejection{{Tool: "editor", Kind: "edit", Title: "editor: x", Reason: "read-only"}},
			Enforcement: &run.Enforcement{Isolation: sandbox.IsolationDocker, Egress: sandbox.EgressProvider,
				AllowedEndpoints: []string{"api.anthropic.com:443"}, RefusedEndpoints: []string{"evil.example:443"}, Summary: "docker container",
				CredentialInside: "provider cline cannot be proxied", CredentialVariables: []string{"GITHUB_TOKEN"},
				Container: &run.ContainerEnforcement{Engine: "docker", Image: "cline-mcp/cline:latest", ImageID: "sha256:1", CLI: "cline@3.0.65",
					User: "1000:1000", UsernsMode: "keep-id", ReadOnlyRoot: true, CapDrop: []string{"ALL"}, NoNewPrivileges: true,
					Network: "none", Mounts: []run.MountEnforcement{{Target: "/work", Kind: "bind"}}, MemoryBytes: 1 << 31, PidsLimit: 256}}}
		switch tool {
		case run.ApplyClineEdits:
			r.Diff, r.DiffTruncated, r.ChangedFiles, r.HeadBefore, r.HeadAfter, r.Git = &diff, true, files, "a", "b", git
		case run.AskClineWorkspace:
			r.Worktree = wt
		case run.ReviewCline:
			r.Worktree = wt
			r.Review = &review.Report{Target: "base:main", Base: "a", Head: "b", FilesTruncated: true, DiffTruncated: true, Parsed: true, Summary: "s",
				Files: []review.FileStat{{Path: "y", OldPath: "x", Status: "R", Added: 1, Deleted: 2, Binary: true}},
				Findings: []review.Finding{{Severity: review.High, File: "y", Line: 3, EndLine: 4, Title: "t", Detail: "d", Suggestion: "s", OutsideDiff: true},
					{Severity: review.Low, Title: "t", PathDropped: "absolute path outside the repository"}}}
		}
		return r
	}
	m := map[run.Tool][]run.Result{}
	for _, spec := range toolSpecs {
		m[spec.tool] = append(m[spec.tool], full(spec.tool), run.Result{OK: true})
		for _, k := range cline.Kinds {
			f := full(spec.tool)
			f.OK, f.Kind, f.Message, f.Retryable, f.StderrTail, f.StdoutTail = false, string(k), "failed", true, "err", "out"
			f.RetryAfterSeconds = 7
			m[spec.tool] = append(m[spec.tool], f, run.Result{Kind: string(k)})
		}
	}
	return m
}

// covered records, for every object path in doc, the keys it had.
func covered(doc any, path string, seen map[string]bool) {
	switch x := doc.(type) {
	case map[string]any:
		for k, v := range x {
			seen[path+"."+k] = true
			covered(v, path+"."+k, seen)
		}
	case []any:
		for _, v := range x {
			covered(v, path+"[]", seen)
		}
	}
}

// properties lists every property path of a generated schema (map values are not properties).
func properties(s *gschema.Schema, path string, out map[string]bool) {
	if s == nil {
		return
	}
	for k, p := range s.Properties {
		out[path+"."+k] = true
		properties(p, path+"."+k, out)
	}
	properties(s.Items, path+"[]", out)
}

// TestSchemaAgreementOutput: every result structured writes — a success and a failure of every
// kind, for every tool — satisfies the advertised outputSchema, and also the closed schema of the
// output struct (so no key at any depth is missing from it); together the samples use every
// property of the schema; the kind and isolation enums are the Go constants; and every field of
// run.Result reaches the output.
func TestSchemaAgreementOutput(t *testing.T) {
	for tool, results := range samples() {
		t.Run(string(tool), func(t *testing.T) {
			out := schemas[tool].out
			open := compile(t, outputSchema(tool))
			closedSchema, err := forTool[output](tool)
			if err != nil {
				t.Fatal(err)
			}
			closed := compile(t, mustJSON(closedSchema))
			seen := map[string]bool{}
			docs := []object{}
			for _, r := range results {
				docs = append(docs, structured(tool, r))
			}
			// The MCP layer's own member: a result cut to --result-max-chars (jobs.go, fit).
			docs = append(docs, append(structured(tool, results[0]), member{"truncated", &truncation{JobID: "0123456789abcdef0123456789abcdef", Pages: 3, TotalChars: 150000}}))
			for i, o := range docs {
				r := results[min(i, len(results)-1)]
				b, err := json.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				var doc any
				if err := json.Unmarshal(b, &doc); err != nil {
					t.Fatal(err)
				}
				if err := schemaAccepts(t, open, doc); err != nil {
					t.Errorf("ok=%v kind=%q: outputSchema rejects %s: %v", r.OK, r.Kind, b, err)
				}
				if err := schemaAccepts(t, closed, doc); err != nil {
					t.Errorf("ok=%v kind=%q: a key the output struct lacks in %s: %v", r.OK, r.Kind, b, err)
				}
				covered(doc, "", seen)
			}
			want := map[string]bool{}
			properties(out, "", want)
			var missing []string
			for p := range want {
				if !seen[p] {
					missing = append(missing, p)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("schema properties no result ever has (or the samples miss them): %v", missing)
			}
			// The enums of the output struct's schema (the advertised one leaves the bookkeeping
			// members out and names them in its description).
			if got := closedSchema.Properties["kind"].Enum; !reflect.DeepEqual(got, strs(cline.Kinds)) {
				t.Errorf("kind enum %v, cline.Kinds %v", got, cline.Kinds)
			}
			for _, f := range reflect.VisibleFields(reflect.TypeFor[output]()) {
				name := jsonName(f)
				if closedSchema.Properties[name] != nil && out.Properties[name] == nil && (f.Tag.Get("outline") != "-" || out.Description != bookkeeping) {
					t.Errorf("outputSchema leaves out %s, which is no bookkeeping member it says it leaves out", name)
				}
			}
			for _, iso := range []*gschema.Schema{closedSchema.Properties["isolation"], closedSchema.Properties["attemptIsolation"].Items} {
				if !reflect.DeepEqual(iso.Enum, strs(sandbox.Isolations)) {
					t.Errorf("isolation enum %v, sandbox.Isolations %v", iso.Enum, sandbox.Isolations)
				}
			}
		})
	}

	// Every run.Result field is written under these keys; a new field fails here until the
	// output struct (and structured) carry it.
	resultKeys := map[string][]string{
		"OK": {"ok"}, "Text": {"text"}, "Warnings": {"warnings"}, "Attempts": {"attempts"}, "ExitCode": {"exitCode"},
		"Signal": {"signal"}, "Duration": {"durationMs", "elapsedSeconds"}, "Model": {"model"}, "Usage": {"usage"},
		"Isolation": {"isolation"}, "AttemptIsolation": {"attemptIsolation"}, "Diff": {"diff"},
		"DiffTruncated": {"diffTruncated"}, "ChangedFiles": {"changedFiles"}, "HeadBefore": {"headBefore"},
		"HeadAfter": {"headAfter"}, "Git": {"git"}, "Worktree": {"worktree"}, "Kind": {"kind"}, "Message": {"message"},
		"Retryable": {"retryable"}, "RetryAfterSeconds": {"retryAfterSeconds"}, "StderrTail": {"stderrTail"}, "StdoutTail": {"stdoutTail"},
		"SessionID": {"sessionId"}, "Turn": {"turn"}, "Rejected": {"rejectedToolCalls"}, "Enforcement": {"enforcement"}, "Review": {"review"},
	}
	outKeys := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[output]()) {
		outKeys[jsonName(f)] = true
	}
	used := map[string]bool{"truncated": true} // the MCP layer's own (paging), not a run.Result field
	for _, f := range reflect.VisibleFields(reflect.TypeFor[run.Result]()) {
		keys, ok := resultKeys[f.Name]
		if !ok {
			t.Errorf("run.Result.%s reaches no output key", f.Name)
		}
		for _, k := range keys {
			used[k] = true
			if !outKeys[k] {
				t.Errorf("run.Result.%s: output struct has no %q", f.Name, k)
			}
		}
	}
	for k := range outKeys {
		if !used[k] {
			t.Errorf("output key %q comes from no run.Result field", k)
		}
	}
}

// TestToolsTags: a tools:"…" tag names real tools, so a misspelt one cannot drop a field silently.
func TestToolsTags(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[arguments](), reflect.TypeFor[output]()} {
		for _, f := range reflect.VisibleFields(typ) {
			only, ok := f.Tag.Lookup("tools")
			if !ok {
				continue
			}
			for _, name := range strings.Split(only, ",") {
				if !slices.ContainsFunc(toolSpecs, func(s toolSpec) bool { return string(s.tool) == name }) {
					t.Errorf("%s.%s: tools tag names unknown tool %q", typ.Name(), f.Name, name)
				}
			}
		}
	}
}

// TestDumpSchemas writes what tools/list advertises to $CLINE_MCP_SCHEMA_DUMP (keys sorted), to
// diff the schemas across a change.
func TestDumpSchemas(t *testing.T) {
	dst := os.Getenv("CLINE_MCP_SCHEMA_DUMP")
	if dst == "" {
		t.Skip("set CLINE_MCP_SCHEMA_DUMP to a file to write the advertised tools to")
	}
	var tools []any
	for _, s := range toolSpecs {
		b, err := json.Marshal(s.mcpTool())
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, v)
	}
	b, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDescriptionsCarryRules: every bound, length, pattern, enum value and default of an input
// field also stands in its description, for clients that strip those keywords from the schema the
// model sees (Codex: minimum, maximum, default, pattern, minLength).
func TestDescriptionsCarryRules(t *testing.T) {
	checked := 0
	for tool, sc := range schemas {
		in := sc.in
		for name, f := range in.Properties {
			var want []string
			if f.MinLength != nil {
				want = append(want, fmt.Sprintf("at least %d", *f.MinLength))
			}
			if f.Minimum != nil {
				want = append(want, fmt.Sprintf("%g", *f.Minimum))
			}
			if f.Maximum != nil {
				want = append(want, fmt.Sprintf("%g", *f.Maximum))
			}
			if f.Pattern != "" {
				want = append(want, f.Pattern)
			}
			for _, v := range f.Enum {
				want = append(want, fmt.Sprint(v))
			}
			if f.Default != nil {
				want = append(want, "default "+string(f.Default))
			}
			for _, w := range want {
				checked++
				if !strings.Contains(f.Description, w) {
					t.Errorf("%s.%s: description %q does not say %q", tool, name, f.Description, w)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d rules checked; the test would prove little", checked)
	}
	var ts struct {
		Properties map[string]struct{ Description string } `json:"properties"`
	}
	if err := json.Unmarshal(inputSchema("ask_cline"), &ts); err != nil {
		t.Fatal(err)
	}
	if d := ts.Properties["timeoutSeconds"].Description; !strings.Contains(d, "1 to 300") || !strings.Contains(d, "default 180") {
		t.Errorf("timeoutSeconds as advertised: %q, want 1 to 300 and default 180", d)
	}
}
