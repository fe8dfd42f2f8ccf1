package acp

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// commitSubcommands create commits or move refs.
var commitSubcommands = []string{"commit", "commit-tree", "merge", "rebase", "cherry-pick", "revert", "am", "pull", "update-ref"}

// gitOptsWithValue are git's global options that take the next word as their value.
var gitOptsWithValue = []string{"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"}

// wrappers run their arguments as a command.
var wrappers = []string{"env", "command", "exec", "nohup", "sudo", "time", "nice", "xargs", "builtin", "doas", "stdbuf", "timeout"}

// runners are the commands whose arguments this check understands.
var runners = []string{"git", "sh", "bash", "dash", "zsh", "eval"}

// maxDepth bounds nested `sh -c` parsing.
const maxDepth = 4

// CommitCommand reports why a shell command line would create a git commit or move a ref ("" when
// it would not, as far as its text shows). It parses the line as POSIX/bash shell (pipelines,
// lists, substitutions, `sh -c '…'` and `eval` strings, wrappers like env and xargs) and looks
// at every git invocation's subcommand after git's global options. A line it cannot parse, or a
// git call whose subcommand is not a literal, counts as committing: the policy cannot clear it.
func CommitCommand(line string) string {
	return commitIn(line, 0)
}

func commitIn(line string, depth int) string {
	if depth > maxDepth {
		return "commands nested too deeply to check"
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return "the command cannot be parsed as shell, so it cannot be checked"
	}
	why := ""
	syntax.Walk(f, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		if ce, ok := n.(*syntax.CallExpr); ok {
			why = commitCall(ce.Args, depth)
		}
		return why == ""
	})
	return why
}

// commitCall checks one simple command (its words).
func commitCall(args []*syntax.Word, depth int) string {
	words := make([]string, len(args))
	lits := make([]bool, len(args))
	for i, w := range args {
		words[i], lits[i] = wordText(w)
	}
	i := 0
	if len(words) > 0 && lits[0] && slices.Contains(wrappers, path.Base(words[0])) {
		// env, sudo -u me, xargs -0 …: whatever runs is one of the later words; check from
		// each one that names a git or a shell (a wrapper's option values are never those).
		for j := 1; j < len(words); j++ {
			if lits[j] && slices.Contains(runners, path.Base(words[j])) {
				if why := commitCall(args[j:], depth); why != "" {
					return why
				}
			}
		}
		return ""
	}
	if i >= len(words) {
		return ""
	}
	if !lits[i] {
		for j := i + 1; j < len(words); j++ {
			if lits[j] && slices.Contains(commitSubcommands, words[j]) {
				return "a command whose name is computed runs " + words[j]
			}
		}
		return ""
	}
	switch name := path.Base(words[i]); {
	case name == "git":
		return gitSubcommand(words[i+1:], lits[i+1:])
	case (name == "sh" || name == "bash" || name == "dash" || name == "zsh") && i+2 < len(words) && words[i+1] == "-c":
		if !lits[i+2] {
			return "a shell runs a computed command line"
		}
		return commitIn(words[i+2], depth+1)
	case name == "eval":
		return commitIn(strings.Join(words[i+1:], " "), depth+1)
	}
	return ""
}

func gitSubcommand(words []string, lits []bool) string {
	for j := 0; j < len(words); j++ {
		w := words[j]
		if !lits[j] {
			return "git runs a computed subcommand"
		}
		if slices.Contains(gitOptsWithValue, w) {
			j++
			continue
		}
		if strings.HasPrefix(w, "-") {
			continue
		}
		if slices.Contains(commitSubcommands, w) {
			return "git " + w
		}
		return ""
	}
	return ""
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
