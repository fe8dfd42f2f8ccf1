package redact

import (
	"bytes"
	"slices"
)

// span is a half-open byte range [s, e) to replace with Marker.
type span struct{ s, e int }

type charClass [256]bool

func class(ranges ...string) *charClass {
	var c charClass
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for x := int(r[0]); x <= int(r[2]); x++ {
				c[x] = true
			}
			continue
		}
		for i := range len(r) {
			c[r[i]] = true
		}
	}
	return &c
}

var (
	alnum      = class("a-z", "A-Z", "0-9")
	alnumDash  = class("a-z", "A-Z", "0-9", "-")
	alnumUnder = class("a-z", "A-Z", "0-9", "_")
	b64url     = class("a-z", "A-Z", "0-9", "-_")
	b64urlDot  = class("a-z", "A-Z", "0-9", "-_.")
	skChars    = class("a-z", "A-Z", "0-9", "-_*")
	upperNum   = class("A-Z", "0-9")
	// bearerChars covers RFC 6750 b64token plus '*' used by masked keys.
	bearerChars = class("a-z", "A-Z", "0-9", "-._~+/=*")
)

// tokenRule describes a self-identifying credential: a fixed prefix followed
// by a run of class characters of length min..max (max 0 = unbounded).
type tokenRule struct {
	prefix    string
	class     *charClass
	min, max  int
	needDigit bool // short runs must contain a digit or '*' ("sk-learn" is a library)
}

// looseRules are the Diagnostic-level token rules: shorter and looser than
// the shapes, because a tail also shows test keys, masked keys (sk-***123)
// and keys cut by the provider's error message.
var looseRules = []tokenRule{
	{prefix: "sk-", class: skChars, min: 6, needDigit: true}, // OpenAI, Anthropic (sk-ant-), sk-proj-
	{prefix: "sk_live_", class: alnum, min: 10},              // Stripe
	{prefix: "sk_test_", class: alnum, min: 10},
	{prefix: "rk_live_", class: alnum, min: 10},
	{prefix: "rk_test_", class: alnum, min: 10},
	{prefix: "nvapi-", class: b64url, min: 8}, // NVIDIA
	{prefix: "ghp_", class: alnum, min: 20},   // GitHub
	{prefix: "gho_", class: alnum, min: 20},
	{prefix: "ghu_", class: alnum, min: 20},
	{prefix: "ghs_", class: alnum, min: 20},
	{prefix: "ghr_", class: alnum, min: 20},
	{prefix: "github_pat_", class: alnumUnder, min: 20},
	{prefix: "glpat-", class: b64url, min: 20},   // GitLab
	{prefix: "xoxb-", class: alnumDash, min: 10}, // Slack
	{prefix: "xoxp-", class: alnumDash, min: 10},
	{prefix: "xoxa-", class: alnumDash, min: 10},
	{prefix: "xoxr-", class: alnumDash, min: 10},
	{prefix: "xoxs-", class: alnumDash, min: 10},
	{prefix: "xoxe-", class: alnumDash, min: 10},
	{prefix: "AKIA", class: upperNum, min: 16, max: 16}, // AWS access key id
	{prefix: "ASIA", class: upperNum, min: 16, max: 16},
	{prefix: "AIza", class: b64url, min: 30},     // Google API key
	{prefix: "ya29.", class: b64urlDot, min: 20}, // Google OAuth access token
	{prefix: "hf_", class: alnum, min: 30},       // Hugging Face
	{prefix: "gsk_", class: alnum, min: 20},      // Groq
	{prefix: "xai-", class: alnum, min: 20},      // xAI
	{prefix: "pplx-", class: alnum, min: 20},     // Perplexity
	{prefix: "r8_", class: alnum, min: 20},       // Replicate
	{prefix: "npm_", class: alnum, min: 30},      // npm
	{prefix: "SG.", class: b64urlDot, min: 40},   // SendGrid
	{prefix: "shpat_", class: alnum, min: 20},    // Shopify
	{prefix: "dop_v1_", class: alnum, min: 40},   // DigitalOcean
}

// Level says how much a Redactor removes.
type Level uint8

const (
	// Precise is for what the user reads as content (answers, diffs,
	// progress): known literal values and credential shapes only, so code
	// and prose are never changed.
	Precise Level = iota
	// Diagnostic is for stderr/stdout tails, error messages and logs: on
	// top of Precise, the name-based rules (KEY=value, "apiKey": "...",
	// Authorization: ..., password: ...) and looser token shapes.
	Diagnostic
	numLevels
)

// Byte flags of the scanner, one table per level.
const (
	fWord  byte = 1 << iota // identifier byte: a word starts after a non-word byte
	fColon                  // ':' — URL user-info, and "name: value" at Diagnostic
	fEq                     // '=' — NAME=value, Diagnostic only
	fDash                   // '-' — PEM private key blocks
)

// scanTable is what the scanner of one level looks at: byte flags, and
// for every word start the pair of its first two bytes mapped to the
// detectors that may start there (0: none).
type scanTable struct {
	flags   [256]byte
	pairIdx [1 << 16]uint8
	starts  []wordStart
}

// wordStart lists the detectors that may match at a word starting with one
// pair of bytes.
type wordStart struct {
	shapes []*shape
	loose  bool // the looser Diagnostic token rules (looseRules)
	jwt    bool
	auth   bool // "Bearer <token>", "Basic <base64>"
}

var (
	tables     [numLevels]*scanTable
	looseByFst [256][]tokenRule
)

func init() {
	compileShapes()
	for _, r := range looseRules {
		looseByFst[r.prefix[0]] = append(looseByFst[r.prefix[0]], r)
	}
	for lv := range numLevels {
		t := &scanTable{starts: []wordStart{{}}}
		for c := range 256 {
			if isWord(byte(c)) {
				t.flags[c] = fWord
			}
		}
		t.flags[':'] = fColon
		t.flags['-'] = fDash
		t.flags['='] = fEq
		// mark applies f to the entry of every key of prefix, creating
		// entries as needed.
		mark := func(prefix string, fold bool, f func(*wordStart)) {
			for _, k := range pairKeys(prefix, fold) {
				if t.pairIdx[k] == 0 {
					t.starts = append(t.starts, wordStart{})
					t.pairIdx[k] = uint8(len(t.starts) - 1)
				}
				f(&t.starts[t.pairIdx[k]])
			}
		}
		for _, s := range compiled {
			for _, p := range s.prefixes {
				mark(p, s.fold, func(w *wordStart) { w.shapes = appendOnce(w.shapes, s) })
			}
		}
		mark("eyJ", false, func(w *wordStart) { w.jwt = true })
		mark("BEARER", true, func(w *wordStart) { w.auth = true })
		mark("BASIC", true, func(w *wordStart) { w.auth = true })
		if lv == Diagnostic {
			for _, r := range looseRules {
				mark(r.prefix, false, func(w *wordStart) { w.loose = true })
			}
		}
		if len(t.starts) > 255 {
			panic("redact: too many word-start pairs")
		}
		tables[lv] = t
	}
}

// pairKeys returns the keys of the first two bytes of prefix, in every
// case when fold.
func pairKeys(prefix string, fold bool) []uint16 {
	a, b := prefix[0], prefix[1]
	if !fold {
		return []uint16{uint16(a)<<8 | uint16(b)}
	}
	var keys []uint16
	for _, x := range caseVariants(a) {
		for _, y := range caseVariants(b) {
			keys = append(keys, uint16(x)<<8|uint16(y))
		}
	}
	return keys
}

func caseVariants(c byte) []byte {
	switch {
	case isUpper(c):
		return []byte{c, c - 'A' + 'a'}
	case isLower(c):
		return []byte{c, c - 'a' + 'A'}
	}
	return []byte{c}
}

func appendOnce(list []*shape, s *shape) []*shape {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// scan appends to sp the spans of b that hold secrets at level lv, sorted
// and merged. open reports a private key block whose END line is not in b
// (the caller streaming lines keeps redacting until it sees one).
func (r *Redactor) scan(b []byte, sp []span, lv Level) (_ []span, open bool) {
	t := tables[lv]
	noJWT := 0 // no JWT starts before this index (keeps "eyJ-eyJ-..." linear)
	n := len(b)
	flags := &t.flags
	for i := 0; i < n; i++ {
		f := flags[b[i]]
		if f == 0 {
			continue
		}
		if f == fWord {
			// b[i] starts a word: the loop skips the rest of every word.
			if i+1 < n {
				if w := t.pairIdx[uint16(b[i])<<8|uint16(b[i+1])]; w != 0 {
					if s, e, ok := wordAt(b, i, &t.starts[w], lv, &noJWT); ok {
						sp = append(sp, span{s, e})
						i = e - 1
					}
				}
			}
			j := i + 1
			for ; j < len(b); j++ {
				if flags[b[j]] != fWord {
					break
				}
			}
			i = j - 1
			continue
		}
		switch f {
		case fColon:
			m := len(sp)
			sp = colonValue(b, i, sp, lv)
			sp = urlPassword(b, i, sp, lv)
			i = skipTo(sp, m, i)
		case fEq:
			m := len(sp)
			sp = equalsValue(b, i, sp, lv)
			i = skipTo(sp, m, i)
		case fDash:
			if s, e, o, ok := pemBody(b, i, lv); ok {
				sp = pemLines(b, s, e, sp)
				open = open || o
				i = max(i, e-1)
			}
		}
	}
	return merge(r.literalSpans(b, sp)), open
}

// wordAt tries the detectors of a word start at b[i] and returns the span
// to redact.
func wordAt(b []byte, i int, w *wordStart, lv Level, noJWT *int) (int, int, bool) {
	for _, s := range w.shapes {
		if e, ok := s.matchAt(b, i); ok {
			return i, e, true
		}
	}
	if w.loose {
		if e, ok := looseAt(b, i); ok {
			return i, e, true
		}
	}
	if w.jwt && i >= *noJWT {
		e, ok := jwtAt(b, i)
		if ok {
			return i, e, true
		}
		// Any "eyJ" inside this base64url run ends the run at the same
		// byte and fails the same way.
		*noJWT = run(b, i, b64url)
	}
	if w.auth {
		if s, e, ok := authAt(b, i, lv); ok {
			return s, e, true
		}
	}
	return 0, 0, false
}

// skipTo returns where scanning continues after a detector at i appended
// sp[n:]: past the last value found, so a value is never rescanned (an
// unterminated quote reaches the end of b, and rescanning it for every
// later name would be quadratic).
func skipTo(sp []span, n, i int) int {
	for _, x := range sp[n:] {
		i = max(i, x.e-1)
	}
	return i
}

// merge sorts spans and joins overlapping or touching ones, so adjacent
// secrets become one Marker and the output is stable under re-redaction.
func merge(sp []span) []span {
	if len(sp) < 2 {
		return sp
	}
	slices.SortFunc(sp, func(a, b span) int { return a.s - b.s })
	out := sp[:1]
	for _, x := range sp[1:] {
		last := &out[len(out)-1]
		if x.s <= last.e {
			last.e = max(last.e, x.e)
			continue
		}
		out = append(out, x)
	}
	return out
}

func run(b []byte, i int, c *charClass) int {
	for i < len(b) && c[b[i]] {
		i++
	}
	return i
}

// looseAt matches a Diagnostic-level token rule at b[i] and returns its
// end.
func looseAt(b []byte, i int) (int, bool) {
	for _, r := range looseByFst[b[i]] {
		if !bytes.HasPrefix(b[i:], []byte(r.prefix)) {
			continue
		}
		j := i + len(r.prefix)
		e := run(b, j, r.class)
		n := e - j
		if n < r.min || (r.max > 0 && n > r.max) {
			continue
		}
		if r.needDigit && n < 20 && bytes.IndexAny(b[j:e], "0123456789*") < 0 {
			continue
		}
		return e, true
	}
	return 0, false
}

// jwtAt matches header.payload[.signature] where header and payload are
// base64url JSON objects (both start with "eyJ", the encoding of `{"`).
func jwtAt(b []byte, i int) (int, bool) {
	if !bytes.HasPrefix(b[i:], []byte("eyJ")) {
		return 0, false
	}
	e := run(b, i, b64url)
	if e-i < 10 || e+1 >= len(b) || b[e] != '.' || !bytes.HasPrefix(b[e+1:], []byte("eyJ")) {
		return 0, false
	}
	p := e + 1
	e = run(b, p, b64url)
	if e-p < 10 {
		return 0, false
	}
	if e < len(b) && b[e] == '.' {
		e = run(b, e+1, b64url)
	}
	return e, true
}

// isWordy reports a plain word ("token", "Authentication", "NONE"): letters
// only, in one natural casing, shorter than a typical generated secret.
func isWordy(t []byte) bool {
	if len(t) == 0 || len(t) >= 20 {
		return false
	}
	lowerRest, upperRest := true, true
	for i, c := range t {
		if !isAlpha(c) {
			return false
		}
		if i > 0 {
			lowerRest = lowerRest && isLower(c)
			upperRest = upperRest && isUpper(c)
		}
	}
	return lowerRest || upperRest
}

// looksSecret is the test for an unquoted value after a secret name when the
// syntax alone is not conclusive ("password: hunter22" vs "password: see docs").
func looksSecret(t []byte) bool { return len(t) >= 6 && !isWordy(t) }

// authSchemes are kept in front of a redacted Authorization value.
var authSchemes = []string{"BEARER", "BASIC", "TOKEN", "DIGEST", "BOT", "NEGOTIATE", "NTLM", "APIKEY", "KEY"}
