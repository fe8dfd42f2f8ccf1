package main

import (
	"fmt"
	"strconv"
	"strings"
)

// version is what `cline version` and `cline -V` print.
const version = "3.0.65"

// config is the parsed command line. Only what the fake acts on is kept; the other flags of the
// real CLI are accepted and ignored so that argv built for the real CLI never trips the fake.
type config struct {
	json, verbose, plan, yolo, showVersion, help, acp bool

	autoApprove    *bool
	cwd            string
	thinking       string
	provider       string
	model          string
	system         string
	key            string
	dataDir        string
	configDir      string
	timeout        string
	retries        string
	sessionID      string // --id: always interactive in the real CLI, so never a headless run
	positionals    []string
	subcommandWord string // set when the single positional is a known subcommand
}

// usageError is an error the real CLI reports as `\x1b[31merror:\x1b[0m <msg>` before anything
// else happens (nothing on stdout, providers.json untouched, exit 1).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

const unquotedHint = `Prompt text must be passed as a single quoted argument, for example: cline "fix the tests". Use "cline --help" to see available commands and flags.`

type optKind int

const (
	optBool        optKind = iota
	optValue               // <value> required
	optOptional            // [value]: takes the next argument unless it starts with '-'
	optAutoApprove         // takes the next argument only if it is true/false
)

type optSpec struct {
	kind optKind
	set  func(c *config, v string)
}

// options mirrors `cline --help` of 3.0.65 (plus the hidden --yolo/-y).
var options = map[string]optSpec{
	"-V":             {optBool, func(c *config, _ string) { c.showVersion = true }},
	"--version":      {optBool, func(c *config, _ string) { c.showVersion = true }},
	"-p":             {optBool, func(c *config, _ string) { c.plan = true }},
	"--plan":         {optBool, func(c *config, _ string) { c.plan = true }},
	"-a":             {optBool, func(c *config, _ string) { c.plan = false }},
	"--act":          {optBool, func(c *config, _ string) { c.plan = false }},
	"--json":         {optBool, func(c *config, _ string) { c.json = true }},
	"-i":             {optBool, nil},
	"--tui":          {optBool, nil},
	"-z":             {optBool, nil},
	"--zen":          {optBool, nil},
	"--acp":          {optBool, func(c *config, _ string) { c.acp = true }},
	"--worktree":     {optBool, nil},
	"--update":       {optBool, nil},
	"--kanban":       {optBool, nil},
	"-v":             {optBool, func(c *config, _ string) { c.verbose = true }},
	"--verbose":      {optBool, func(c *config, _ string) { c.verbose = true }},
	"-h":             {optBool, func(c *config, _ string) { c.help = true }},
	"--help":         {optBool, func(c *config, _ string) { c.help = true }},
	"-y":             {optBool, func(c *config, _ string) { c.yolo = true }},
	"--yolo":         {optBool, func(c *config, _ string) { c.yolo = true }},
	"--auto-approve": {optAutoApprove, func(c *config, v string) { b := v == "true"; c.autoApprove = &b }},
	"-c":             {optValue, func(c *config, v string) { c.cwd = v }},
	"--cwd":          {optValue, func(c *config, v string) { c.cwd = v }},
	"--thinking": {optOptional, func(c *config, v string) {
		if v == "" {
			v = "medium"
		}
		c.thinking = v
	}},
	"--compaction": {optValue, nil},
	"--id":         {optValue, func(c *config, v string) { c.sessionID = v }},
	"-P":           {optValue, func(c *config, v string) { c.provider = v }},
	"--provider":   {optValue, func(c *config, v string) { c.provider = v }},
	"-k":           {optValue, func(c *config, v string) { c.key = v }},
	"--key":        {optValue, func(c *config, v string) { c.key = v }},
	"-m":           {optValue, func(c *config, v string) { c.model = v }},
	"--model":      {optValue, func(c *config, v string) { c.model = v }},
	"-s":           {optValue, func(c *config, v string) { c.system = v }},
	"--system":     {optValue, func(c *config, v string) { c.system = v }},
	"--retries":    {optOptional, func(c *config, v string) { c.retries = v }},
	"-t":           {optValue, func(c *config, v string) { c.timeout = v }},
	"--timeout":    {optValue, func(c *config, v string) { c.timeout = v }},
	"--config":     {optValue, func(c *config, v string) { c.configDir = v }},
	"--data-dir":   {optValue, func(c *config, v string) { c.dataDir = v }},
	"--hooks-dir":  {optValue, nil},
}

// subcommands of the real CLI. Only `version` is implemented.
var subcommands = map[string]bool{
	"auth": true, "config": true, "plugin": true, "skill": true, "connect": true, "mcp": true,
	"doctor": true, "history": true, "h": true, "hook": true, "schedule": true, "hub": true,
	"dashboard": true, "update": true, "version": true, "kanban": true,
}

// parseArgs parses argv (without argv[0]) the way commander does for the real CLI: options may
// appear anywhere, `--opt=value` and `-mVALUE` are accepted, `--` ends option parsing, and the
// first unknown option aborts with commander's doubled "error: error: unknown option".
func parseArgs(args []string) (*config, error) {
	c := &config{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			c.positionals = append(c.positionals, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			c.positionals = append(c.positionals, a)
			continue
		}
		name, inline, hasInline := a, "", false
		if strings.HasPrefix(a, "--") {
			if k, v, ok := strings.Cut(a, "="); ok {
				name, inline, hasInline = k, v, true
			}
		} else if len(a) > 2 {
			// -mVALUE: a short option with its value attached.
			if spec, ok := options[a[:2]]; ok && spec.kind != optBool {
				name, inline, hasInline = a[:2], a[2:], true
			}
		}
		spec, ok := options[name]
		if !ok {
			return nil, &usageError{fmt.Sprintf("error: unknown option '%s'", a)}
		}
		var val string
		switch spec.kind {
		case optBool:
			if hasInline {
				return nil, &usageError{fmt.Sprintf("error: option '%s' does not take an argument", name)}
			}
		case optValue:
			switch {
			case hasInline:
				val = inline
			case i+1 < len(args):
				i++
				val = args[i]
			default:
				return nil, &usageError{fmt.Sprintf("error: option '%s' argument missing", name)}
			}
		case optOptional:
			if hasInline {
				val = inline
			} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				val = args[i]
			}
		case optAutoApprove:
			// The real CLI's parser only takes "true"/"false"; any other word stays a positional,
			// which then fails as an unquoted prompt (u_invalid_auto_approve).
			val = "true"
			if hasInline {
				val = inline
			} else if i+1 < len(args) && (args[i+1] == "true" || args[i+1] == "false") {
				i++
				val = args[i]
			}
		}
		if spec.set != nil {
			spec.set(c, val)
		}
	}
	return c, nil
}

// validate applies the checks the real CLI makes after parsing, in its order.
func (c *config) validate() error {
	switch {
	case len(c.positionals) == 1 && subcommands[c.positionals[0]]:
		c.subcommandWord = c.positionals[0]
		return nil
	case len(c.positionals) > 1,
		len(c.positionals) == 1 && !strings.ContainsFunc(c.positionals[0], isSpace):
		return &usageError{"Unknown command or unquoted prompt: " + strings.Join(c.positionals, " ") + "\n" + unquotedHint}
	}
	if c.thinking != "" {
		switch c.thinking {
		case "none", "low", "medium", "high", "xhigh":
		default:
			return &usageError{fmt.Sprintf(`invalid thinking level %q (expected "none", "low", "medium", "high", or "xhigh")`, c.thinking)}
		}
	}
	if c.timeout != "" {
		if n, err := strconv.Atoi(c.timeout); err != nil || n < 1 {
			return &usageError{fmt.Sprintf(`invalid timeout %q (expected integer >= 1)`, c.timeout)}
		}
	}
	return nil
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

// mistakeLimit is the consecutive-failure limit: 3 by default (the code's value, not --help's 6).
func (c *config) mistakeLimit() int {
	if n, err := strconv.Atoi(c.retries); err == nil && n >= 1 {
		return n
	}
	return 3
}

// prompt is the single positional argument ("" when there is none).
func (c *config) prompt() string {
	if len(c.positionals) == 1 && c.subcommandWord == "" {
		return c.positionals[0]
	}
	return ""
}
