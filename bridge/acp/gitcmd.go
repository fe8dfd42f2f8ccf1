package acp

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The apply policy's check of a command line (GitCommand) is an allow-list: a git invocation
// passes only when its subcommand (and each option that matters) can neither move a ref nor
// write the repository (.git: refs, objects, config, hooks, the index). Everything else that
// names git is rejected, and so is whatever cannot be read: a line that does not parse, a
// computed command name or subcommand, git's arguments supplied by xargs, a git variable in the
// environment (GIT_DIR, GIT_PAGER, …, which can point git elsewhere or run a program), and any
// word that names a .git path component (a redirect or cp into .git/refs moves a ref without git).

// gitReadOnly are the subcommands that read the repository and write nothing but the working
// tree's stat cache in the index (status refreshes it).
var gitReadOnly = []string{
	"status", "diff", "log", "show", "ls-files", "ls-tree", "grep", "blame", "annotate", "rev-parse",
	"cat-file", "rev-list", "describe", "shortlog", "diff-files", "diff-index", "diff-tree", "name-rev",
	"merge-base", "for-each-ref", "show-ref", "show-branch", "whatchanged", "check-ignore", "check-attr",
	"count-objects", "var", "version", "help", "range-diff", "cherry",
}

// gitRunsProgram are options of read-only subcommands that run a program or write a file of the
// agent's choosing (a pager, an external diff or textconv driver, --output into .git/refs).
var gitRunsProgram = []string{"-O", "--open-files-in-pager", "--ext-diff", "--textconv", "--output"}

// gitGlobalOK are git's global options the check accepts; -C takes the next word as its value.
// Every other global option (-c, --config-env, --git-dir, --work-tree, --exec-path, -p, …) is
// rejected: each can point git at another repository or configuration, or run a program.
var gitGlobalOK = []string{"-C", "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
	"--no-replace-objects", "--version", "--help", "--no-lazy-fetch"}

// gitViews are the forms of stash, worktree, reflog and notes that only list or show.
var gitViews = map[string][]string{"stash": {"list", "show"}, "worktree": {"list"}, "reflog": {"show", "list"}, "notes": {"list", "show"}}

// wrappers run their arguments as a command.
var wrappers = []string{"env", "command", "exec", "nohup", "sudo", "time", "nice", "builtin", "doas", "stdbuf", "timeout", "ionice", "chronic", "unbuffer"}

// shells run a command line given with -c.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"}

// maxDepth bounds nested `sh -c` parsing.
const maxDepth = 4

// GitCommand reports why a shell command line may move a git ref or write .git ("" when, as far
// as its text shows, it cannot): every reason the line gives, the first few, joined by "; ". It parses the line as bash (pipelines, lists, substitutions,
// `sh -c '…'` and `eval` strings, wrappers like env, sudo and timeout, find -exec) and checks every
// git invocation against the allow-list above.
func GitCommand(line string) string {
	return gitIn(line, 0)
}

func gitIn(line string, depth int) string {
	if depth > maxDepth {
		return "commands nested too deeply to check"
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return "the command cannot be parsed as shell, so it cannot be checked"
	}
	var whys []string
	add := func(why string) {
		if why != "" && !slices.Contains(whys, why) {
			whys = append(whys, why)
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			add(assignsGit(x.Assigns))
			add(gitCall(x.Args, depth))
		case *syntax.DeclClause: // export GIT_DIR=…
			for _, a := range x.Args {
				add(assignsGit([]*syntax.Assign{a}))
			}
		case *syntax.Redirect:
			if x.Word != nil {
				if s, _ := wordText(x.Word); namesDotGit(s) {
					add("a redirect writes into .git")
				}
			}
		}
		return len(whys) < 4
	})
	return strings.Join(whys, "; ")
}

// assignsGit rejects environment assignments that change what git does.
func assignsGit(as []*syntax.Assign) string {
	for _, a := range as {
		if a.Name != nil && gitVar(a.Name.Value) {
			return "the command sets " + a.Name.Value + ", which changes what git does"
		}
	}
	return ""
}

func gitVar(name string) bool {
	return strings.HasPrefix(name, "GIT_") || slices.Contains([]string{"PAGER", "EDITOR", "VISUAL", "LESSOPEN"}, name)
}

// gitCall checks one simple command (its words).
func gitCall(args []*syntax.Word, depth int) string {
	words := make([]string, len(args))
	lits := make([]bool, len(args))
	for i, w := range args {
		words[i], lits[i] = wordText(w)
		if lits[i] && namesDotGit(words[i]) {
			return "an argument names .git (" + capTo(words[i], 80) + ")"
		}
	}
	if len(words) == 0 {
		return ""
	}
	if !lits[0] {
		return "a command whose name is computed cannot be checked"
	}
	name := path.Base(words[0])
	switch {
	case name == "git":
		return gitSubcommand(words[1:], lits[1:])
	case slices.Contains(wrappers, name):
		// env X=1 git …, sudo -u me git …, timeout 5 git …: check from each later word that
		// names git or a shell (a wrapper's option values are never those).
		for j := 1; j < len(words); j++ {
			if !lits[j] {
				continue
			}
			if k, _, ok := strings.Cut(words[j], "="); ok && name == "env" && gitVar(k) {
				return "the command sets " + k + ", which changes what git does"
			}
			if b := path.Base(words[j]); b == "git" || slices.Contains(shells, b) || b == "eval" || b == "xargs" {
				return gitCall(args[j:], depth)
			}
		}
	case name == "xargs":
		for j := 1; j < len(words); j++ {
			if lits[j] && (path.Base(words[j]) == "git" || slices.Contains(shells, path.Base(words[j]))) {
				return "xargs supplies " + path.Base(words[j]) + "'s arguments, which cannot be checked"
			}
		}
	case name == "find":
		for j := 1; j < len(words); j++ {
			if lits[j] && slices.Contains([]string{"-exec", "-execdir", "-ok", "-okdir"}, words[j]) && j+1 < len(words) {
				if why := gitCall(args[j+1:], depth); why != "" {
					return why
				}
			}
		}
	case slices.Contains(shells, name):
		operand := false
		for j := 1; j < len(words); j++ {
			if words[j] == "-c" && j+1 < len(words) {
				if !lits[j+1] {
					return "a shell runs a computed command line"
				}
				return gitIn(words[j+1], depth+1)
			}
			if !strings.HasPrefix(words[j], "-") {
				operand = true
			}
		}
		if !operand {
			return "a shell reads its commands from stdin, which cannot be checked"
		}
	case name == "eval":
		for j := 1; j < len(words); j++ {
			if !lits[j] {
				return "eval runs a computed command line"
			}
		}
		return gitIn(strings.Join(words[1:], " "), depth+1)
	}
	return ""
}

// gitSubcommand checks git's words after "git": global options, the subcommand, its options. A
// denied subcommand is the reason given before a denied global option (it says more).
func gitSubcommand(words []string, lits []bool) string {
	badOpt := ""
	for j := 0; j < len(words); j++ {
		if !lits[j] {
			return "git runs a computed subcommand or option"
		}
		w := words[j]
		if strings.HasPrefix(w, "-") {
			opt, _, _ := strings.Cut(w, "=")
			if !slices.Contains(gitGlobalOK, opt) && badOpt == "" {
				badOpt = "git " + capTo(opt, 40) + " can point git at another repository or configuration, or run a program"
			}
			if w == "-C" || w == "-c" || slices.Contains([]string{"--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"}, w) {
				j++ // the option's value
			}
			continue
		}
		if why := subcommandOK(w, words[j+1:], lits[j+1:]); why != "" {
			return why
		}
		return badOpt
	}
	return badOpt // git alone, git --version
}

// subcommandOK checks one subcommand and its arguments.
func subcommandOK(sub string, args []string, lits []bool) string {
	for i, a := range args {
		if !lits[i] {
			return "git " + sub + " has a computed argument, which cannot be checked"
		}
		opt, _, _ := strings.Cut(a, "=")
		if a == "--" {
			break
		}
		if slices.Contains(gitRunsProgram, opt) || strings.HasPrefix(a, "-O") && sub == "grep" {
			return "git " + sub + " " + opt + " runs a program or writes a file"
		}
	}
	deny := "git " + capTo(sub, 40) + " can move a ref or write .git"
	switch sub {
	case "branch", "tag", "remote":
		if !onlyListing(sub, args) {
			return deny
		}
	case "stash", "worktree", "reflog", "notes":
		// Only their listing and showing forms; bare git stash stashes (a ref), bare reflog shows
		// and bare notes lists.
		if len(args) == 0 && sub != "reflog" && sub != "notes" || len(args) > 0 && !slices.Contains(gitViews[sub], args[0]) {
			return deny
		}
	case "checkout":
		if !pathsOnly(args, "-q", "--quiet", "-p", "--patch") {
			return deny
		}
	case "restore":
		for _, a := range args {
			if a == "--" {
				break
			}
			if a == "--staged" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "S") {
				return deny // the index
			}
		}
	case "apply":
		for _, a := range args {
			if slices.Contains([]string{"--index", "--cached", "-3", "--3way", "--intent-to-add", "-N", "--build-fake-ancestor"}, strings.SplitN(a, "=", 2)[0]) {
				return deny
			}
		}
	default:
		if !slices.Contains(gitReadOnly, sub) {
			return deny
		}
	}
	return ""
}

// onlyListing: git branch, tag or remote that only lists (no name to create, move or delete).
func onlyListing(sub string, args []string) bool {
	list := map[string][]string{
		"branch": {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--show-current", "--no-color", "--color", "-l", "--list", "--no-column", "--column", "--contains", "--no-contains", "--merged", "--no-merged", "--sort", "--format", "--points-at", "-i", "--ignore-case"},
		"tag":    {"-l", "--list", "-n", "--contains", "--no-contains", "--merged", "--no-merged", "--sort", "--format", "--points-at", "--column", "--no-column", "-i", "--ignore-case", "--color"},
		"remote": {"-v", "--verbose"},
	}[sub]
	listing := false
	for _, a := range args {
		opt, _, _ := strings.Cut(a, "=")
		switch {
		case opt == "-l" || opt == "--list":
			listing = true
		case strings.HasPrefix(a, "-"):
			if !slices.Contains(list, opt) && !(sub == "tag" && strings.HasPrefix(a, "-n")) {
				return false
			}
		default:
			// A positional is a name to create, except the patterns of an explicit --list.
			if !listing {
				return false
			}
		}
	}
	return true
}

// pathsOnly: git checkout [opts] -- <paths>: only files of the working tree, from the index.
func pathsOnly(args []string, opts ...string) bool {
	for i, a := range args {
		if a == "--" {
			return i+1 < len(args)
		}
		if !slices.Contains(opts, a) {
			return false
		}
	}
	return false
}

// namesDotGit reports whether a word (or an --opt=value's value) has a path component .git.
func namesDotGit(w string) bool {
	if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
		w = v
	}
	for _, c := range strings.FieldsFunc(w, func(r rune) bool { return r == '/' || r == '\\' }) {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}

// wordText is a word's value when it is made of literal text only (plain, single- or
// double-quoted without expansions).
func wordText(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(strings.ReplaceAll(x.Value, `\`, "")) // com\mit is commit
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
