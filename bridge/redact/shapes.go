package redact

import (
	"bytes"
	"encoding/base64"
	"math"
	"regexp"
	"regexp/syntax"
)

// shape is a compiled shapeRule.
type shape struct {
	*shapeRule
	rx     *regexp.Regexp // the rule's pattern, anchored at the prefix
	whole  *regexp.Regexp // the same, anchored at both ends
	minLen int            // bytes of the shortest match
	maxLen int            // bytes of the longest match, -1 unbounded
}

var compiled []*shape

// tokenChars are the bytes any shape's match consists of; a run of them
// shorter than the shortest match rules the shape out before its regexp
// runs (keeps "s.mu.Lock()" away from vault's "s." rule).
var tokenChars = class("a-z", "A-Z", "0-9", "-_+/=.~")

// shapeWindow bounds the bytes a shape's regexp looks at; matches are
// shorter (the longest rule allows 1,020 bytes).
const shapeWindow = 2048

func compileShapes() {
	for i := range shapeRules {
		r := &shapeRules[i]
		re, err := syntax.Parse(r.re, syntax.Perl)
		if err != nil {
			panic("redact: rule " + r.id + ": " + err.Error())
		}
		compiled = append(compiled, &shape{
			shapeRule: r,
			rx:        regexp.MustCompile(`^(?:` + r.re + `)`),
			whole:     regexp.MustCompile(`^(?:` + r.re + `)$`),
			minLen:    minLen(re),
			maxLen:    maxLen(re),
		})
	}
}

// minLen is the length in bytes of the shortest ASCII string re matches.
func minLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minLen(s)
		}
		return n
	case syntax.OpAlternate:
		n := math.MaxInt
		for _, s := range re.Sub {
			n = min(n, minLen(s))
		}
		return n
	}
	return 0
}

// maxLen is the length in bytes of the longest ASCII string re matches,
// or -1 when that is unbounded.
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		n := maxLen(re.Sub[0])
		if re.Max < 0 || n < 0 {
			return -1
		}
		return re.Max * n
	case syntax.OpConcat, syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				n += m
			} else {
				n = max(n, m)
			}
		}
		return n
	}
	return 0
}

// maxEndTries bounds the lengths end tries before it asks the regexp
// package for the match (which allocates).
const maxEndTries = 64

// end returns the length of the match of s at the start of w, which
// s.rx.Match(w) reported, without allocating: the longest length up to
// the run of token bytes n that the pattern matches whole (for these token
// patterns the same as the leftmost-first match, or longer).
func (s *shape) end(w []byte, n int) int {
	hi := min(len(w), n)
	if s.maxLen >= 0 {
		hi = min(hi, s.maxLen)
	}
	for l, tries := hi, 0; l >= s.minLen && tries < maxEndTries; l, tries = l-1, tries+1 {
		if s.whole.Match(w[:l]) {
			return l
		}
	}
	return s.rx.FindIndex(w)[1]
}

// matchAt reports whether the shape matches at b[i] (a word start) and
// returns the end of the part to redact.
func (s *shape) matchAt(b []byte, i int) (int, bool) {
	pl := 0
	for _, p := range s.prefixes {
		if hasPrefixAt(b, i, p, s.fold) {
			pl = len(p)
			break
		}
	}
	if pl == 0 {
		return 0, false
	}
	n := run(b, i, tokenChars) - i
	if n < s.minLen || (s.need != 0 && !hasKinds(b[i+pl:i+n], s.need)) || codeLike(b[i+pl:run(b, i+pl, alnumUnder)]) {
		return 0, false // (an identifier is rejected before the regexp runs, too)
	}
	w := b[i:min(len(b), i+shapeWindow)]
	if !s.rx.Match(w) {
		return 0, false
	}
	e := i + s.end(w, n)
	if s.entropy > 0 && entropy(b[i:e]) < s.entropy {
		return 0, false
	}
	if s.need != 0 && !hasKinds(b[i+pl:e], s.need) {
		return 0, false
	}
	if codeLike(b[i+pl : e]) {
		return 0, false // s.ReadUint16LengthPrefixed
	}
	if s.term {
		if e < len(b) && !endsToken(b, e) {
			return 0, false
		}
		return e, true
	}
	return run(b, e, b64url), true
}

// endsToken reports whether b[e] ends a token. gitleaks' terminators are
// a quote or backtick, white space, ';' and a backslash escape; we also
// take any other byte that cannot continue a token (')', ',', '&', '<',
// ...) and a '.' that ends a sentence, but not '(' or a '.' followed by a
// letter: a token followed by those is an identifier being called or
// selected (s.onceSetNextProtoDefaults()).
func endsToken(b []byte, e int) bool {
	switch c := b[e]; c {
	case '(':
		return false
	case '.':
		return e+1 == len(b) || !isWord(b[e+1])
	default:
		return !tokenChars[c]
	}
}

// hasKinds reports whether t holds every character kind in n.
func hasKinds(t []byte, n need) bool {
	var have need
	for _, c := range t {
		switch {
		case isDigit(c):
			have |= needDigit
		case isUpper(c):
			have |= needUpper | needLetter
		case isLower(c):
			have |= needLower | needLetter
		}
	}
	return have&n == n
}

func hasPrefixAt(b []byte, i int, p string, fold bool) bool {
	if len(b)-i < len(p) {
		return false
	}
	if !fold {
		return string(b[i:i+len(p)]) == p
	}
	for k := range len(p) {
		if upper(b[i+k]) != upper(p[k]) {
			return false
		}
	}
	return true
}

// entropy is the Shannon entropy of b in bits per byte, as gitleaks
// computes it for its entropy thresholds.
func entropy(b []byte) float64 {
	var counts [256]uint32
	for _, c := range b {
		counts[c]++
	}
	n := float64(len(b))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// authAt matches the credential of an HTTP Authorization scheme at b[i]
// and returns its span; the scheme word stays so readers still see what
// kind of credential was there.
//   - "Bearer <token>": at Diagnostic any token that is not a plain word;
//     at Precise a token that looks generated: 16 or more characters with
//     letters and digits, an entropy of at least 3 bits per byte, not a
//     camelCase identifier (`Bearer ${token}`, "Bearer token" and
//     "Bearer accessToken2" stay).
//   - "Basic <base64>": base64 that decodes to printable "user:password".
func authAt(b []byte, i int, lv Level) (int, int, bool) {
	var n int
	switch {
	case hasPrefixAt(b, i, "BEARER", true):
		n = 6
	case hasPrefixAt(b, i, "BASIC", true):
		n = 5
	default:
		return 0, 0, false
	}
	s := i + n
	for s < len(b) && (b[s] == ' ' || b[s] == '\t') {
		s++
	}
	if s == i+n {
		return 0, 0, false
	}
	e := run(b, s, bearerChars)
	t := b[s:e]
	if n == 5 {
		return s, e, basicCredential(t)
	}
	if lv == Diagnostic {
		return s, e, len(t) >= 4 && !isWordy(t)
	}
	return s, e, generated(t, 16, 3) && !identifier(t)
}

// generated reports a token that looks machine-made: at least n bytes,
// letters and digits, and at least bits of entropy per byte.
func generated(t []byte, n int, bits float64) bool {
	if len(t) < n {
		return false
	}
	letter, digit := false, false
	for _, c := range t {
		letter = letter || isAlpha(c)
		digit = digit || isDigit(c)
	}
	return letter && digit && entropy(t) >= bits
}

// basicCredential reports base64 that decodes to printable "user:password".
func basicCredential(t []byte) bool {
	var buf [192]byte
	if len(t) < 8 || base64.StdEncoding.DecodedLen(len(t)) > len(buf) {
		return false
	}
	n, err := base64.StdEncoding.Decode(buf[:], t)
	if err != nil || n < 3 {
		return false
	}
	for _, c := range buf[:n] {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return bytes.IndexByte(buf[1:n-1], ':') >= 0
}
