package redact

import (
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"testing"
)

// sampleContexts are the places gitleaks' own rule tests put generated
// secrets (cmd/generate/config/utils/generate.go, GenerateSampleSecrets;
// MIT, see rules.go), {s} the secret: configuration, JSON, XML, YAML,
// source code, Makefiles, plus the places a Cline answer, a diff or a CLI
// error shows one.
var sampleContexts = []string{
	"apiToken=\"{s}\"", "apiToken = \"{s}\"", "apiToken={s}", "apiToken = {s}",
	"{\n    \"api_token\": \"{s}\"\n}",
	`{"config.ini": "API_TOKEN={s}\nBACKUP_ENABLED=true"}`,
	"<apiToken>\n    {s}\n</apiToken>",
	"api_token: {s}", "api_token: '{s}'", "api_token: \"{s}\"",
	`string apiToken = "{s}";`, `var apiToken string = "{s}"`, `apiToken := "{s}"`, "apiToken := `{s}`",
	"String apiToken = \"{s}\";", `$apiToken .= "{s}"`, "apiToken = '{s}'",
	`System.setProperty("API_TOKEN", "{s}")`, "  \"apiToken\" => \"{s}\"",
	"API_TOKEN = \"{s}\"", "API_TOKEN := \"{s}\"", "API_TOKEN ::= \"{s}\"", "API_TOKEN :::= \"{s}\"",
	// Cline output
	"The key {s} is invalid.", "+\tclient := New(\"{s}\")", "error: 401 for {s}", "{s}",
}

// TestRecallGeneratedSamples generates secrets from every shape rule's
// regexp, the way gitleaks makes its true positives, and checks that Text,
// String and a Tail split mid-secret redact each in every sample context.
func TestRecallGeneratedSamples(t *testing.T) {
	r := New(nil)
	rng := rand.New(rand.NewPCG(14, 2026))
	total := 0
	for _, s := range compiled {
		re, err := syntax.Parse(s.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		re = re.Simplify()
		made := 0
		for try := 0; made < 3 && try < 200; try++ {
			var sb strings.Builder
			generate(&sb, re, rng)
			secret := sb.String()
			if !s.rx.MatchString(secret) || entropy([]byte(secret)) < s.entropy || !hasKinds([]byte(secret[2:]), s.need) {
				continue // gitleaks would not count it either
			}
			made++
			for _, ctx := range sampleContexts {
				in := strings.ReplaceAll(ctx, "{s}", secret)
				total++
				for name, got := range map[string]string{"Text": r.Text(in), "String": r.String(in), "Tail": tailOf(r, in, strings.Index(in, secret)+len(secret)/2)} {
					if leak := leaked(in, secret, got); leak != "" {
						t.Errorf("rule %s, %s: %q -> %q still contains %q", s.id, name, in, got, leak)
					}
				}
			}
		}
		if made == 0 {
			t.Errorf("rule %s: could not generate a sample", s.id)
		}
	}
	t.Logf("recall: %d generated samples of %d shape rules in %d contexts, each in Text, String and a split Tail", total, len(compiled), len(sampleContexts))
}

func tailOf(r *Redactor, in string, split int) string {
	tail := r.NewTail(0)
	tail.Write([]byte(in[:split]))
	tail.Write([]byte(in[split:]))
	tail.Flush()
	return tail.String()
}

// generate writes a random string re matches (ASCII; unbounded repeats
// get up to 8 more than their minimum).
func generate(sb *strings.Builder, re *syntax.Regexp, rng *rand.Rand) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && rng.IntN(2) == 0 {
				c = rune(upper(byte(c)))
			}
			sb.WriteRune(c)
		}
	case syntax.OpCharClass:
		var ascii [][2]rune
		for i := 0; i < len(re.Rune); i += 2 {
			lo, hi := max(re.Rune[i], '!'), min(re.Rune[i+1], '~')
			if lo <= hi {
				ascii = append(ascii, [2]rune{lo, hi})
			}
		}
		p := ascii[rng.IntN(len(ascii))]
		sb.WriteRune(p[0] + rune(rng.IntN(int(p[1]-p[0]+1))))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		sb.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[rng.IntN(36)])
	case syntax.OpCapture:
		generate(sb, re.Sub[0], rng)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			generate(sb, s, rng)
		}
	case syntax.OpAlternate:
		generate(sb, re.Sub[rng.IntN(len(re.Sub))], rng)
	case syntax.OpQuest:
		if rng.IntN(2) == 0 {
			generate(sb, re.Sub[0], rng)
		}
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		if hi < 0 {
			hi = lo + 8
		}
		for range lo + rng.IntN(hi-lo+1) {
			generate(sb, re.Sub[0], rng)
		}
	}
}
