package redact

import "bytes"

// Name/value detectors: JSON and JS object keys, YAML and HTTP headers
// (name: value), env and query definitions (NAME=value), URL user-info
// passwords and PEM private key blocks.

// colonValue handles b[i] == ':'. A quoted name ("apiKey", \"apiKey\" inside
// a JSON string, 'apiKey') keeps only string values; an unquoted name
// (Authorization:, X-Api-Key:, password:) takes a quoted value, or an
// unquoted token that looks secret or ends the line.
func colonValue(b []byte, i int, sp []span, lv Level) []span {
	j := i - 1
	for j >= 0 && (b[j] == ' ' || b[j] == '\t') {
		j--
	}
	if j < 0 {
		return sp
	}
	var name []byte
	quotedKey := false
	if b[j] == '"' || b[j] == '\'' {
		k := backslashesBefore(b, j, 0)
		end := j - k
		st := end
		for st > 0 && isNameChar(b[st-1]) {
			st--
		}
		if st == end || st == 0 || b[st-1] != b[j] || backslashesBefore(b, st-1, 0) != k {
			return sp
		}
		name, quotedKey = b[st:end], true
	} else {
		if j != i-1 {
			return sp // "the key : x" is prose; unquoted names touch their colon
		}
		st := i
		for st > 0 && isNameChar(b[st-1]) {
			st--
		}
		if st >= 2 && b[st-1] == '/' && b[st-2] == '/' {
			return sp // URL user-info: urlPassword's job
		}
		name = bytes.TrimLeft(b[st:i], "-.")
	}
	if !secretName(name) {
		return sp
	}
	p := i + 1
	for p < len(b) && (b[p] == ' ' || b[p] == '\t') {
		p++
	}
	if s, e, ok := quotedValue(b, p, authName(name)); ok {
		return appendValue(lv, sp, b, s, e, true)
	}
	if quotedKey {
		return sp // a number, bool, null, object or array: not a string secret
	}
	s, e := p, run(b, p, valueChars)
	if authName(name) && e < len(b) && b[e] == ' ' && inFold(b[s:e], authSchemes) {
		s = e
		for s < len(b) && b[s] == ' ' {
			s++
		}
		return appendValue(lv, sp, b, s, run(b, s, valueChars), false)
	}
	if looksSecret(b[s:e]) || (e-s >= 6 && atLineEnd(b, e)) {
		return appendValue(lv, sp, b, s, e, false)
	}
	return sp
}

// equalsValue handles b[i] == '=' in NAME=value, export NAME="value",
// --api-key=value and ?api_key=value. Without spaces around '=' any value is
// redacted (the syntax is a definition); "name = value" needs a quoted or
// secret-looking value.
func equalsValue(b []byte, i int, sp []span, lv Level) []span {
	if i+1 < len(b) && b[i+1] == '=' {
		return sp
	}
	if i > 0 && bytes.IndexByte([]byte("=!<>"), b[i-1]) >= 0 {
		return sp
	}
	spaced := false
	j := i
	for j > 0 && (b[j-1] == ' ' || b[j-1] == '\t') {
		j--
		spaced = true
	}
	st := j
	for st > 0 && isNameChar(b[st-1]) {
		st--
	}
	name := bytes.TrimLeft(b[st:j], "-.")
	if !secretName(name) {
		return sp
	}
	p := i + 1
	for p < len(b) && (b[p] == ' ' || b[p] == '\t') {
		p++
		spaced = true
	}
	if s, e, ok := quotedValue(b, p, false); ok {
		return appendValue(lv, sp, b, s, e, true)
	}
	e := run(b, p, valueChars)
	if e == p || (spaced && !looksSecret(b[p:e])) {
		return sp
	}
	return appendValue(lv, sp, b, p, e, false)
}

// valueChars are the bytes of an unquoted value: everything but whitespace,
// quotes, JSON escapes and the separators of lists, queries and markup.
var valueChars = func() *charClass {
	var c charClass
	for x := 0x21; x < 256; x++ {
		c[x] = true
	}
	for _, x := range []byte("\"'`,;&<>(){}\\|") {
		c[x] = false
	}
	c[0x7f] = false
	return &c
}()

// quotedValue matches a quoted string value at b[p] whose opening quote may
// be escaped any number of times (\"sk-..\" inside a JSON string) and
// returns the inner span. An unterminated value runs to the end of its
// line: when in doubt, redact.
func quotedValue(b []byte, p int, auth bool) (int, int, bool) {
	m := 0
	for p+m < len(b) && b[p+m] == '\\' {
		m++
	}
	if p+m >= len(b) || (b[p+m] != '"' && b[p+m] != '\'') {
		return 0, 0, false
	}
	q := b[p+m]
	s := p + m + 1
	e := len(b)
	for k := s; k < len(b); {
		x := bytes.IndexByte(b[k:], q)
		if x < 0 {
			x = len(b) - k
		}
		if nl := bytes.IndexByte(b[k:k+x], '\n'); nl >= 0 {
			e = k + nl
			break
		}
		if k+x == len(b) {
			break
		}
		pos := k + x
		k = pos + 1
		n := backslashesBefore(b, pos, s)
		if n <= m {
			e = pos - n
			break
		}
		if m == 0 && n%2 == 0 {
			e = pos
			break
		}
	}
	if auth {
		w := run(b, s, alnum)
		if w < e && b[w] == ' ' && inFold(b[s:w], authSchemes) {
			for s = w; s < e && b[s] == ' '; s++ {
			}
		}
	}
	return s, e, true
}

// appendValue adds the value b[s:e] of a secret name: at Diagnostic
// always, at Precise only when the value itself looks generated (see
// generatedValue), so `password=form.value` stays and
// `API_KEY=7Fq2x9Wv4k1Zp0aBcDe` does not; and not when it is shaped like
// an identifier or a selector made of words (see identifier:
// `IFLA_INET6_TOKEN = C.IFLA_INET6_TOKEN`) or, unquoted, followed by '(',
// '{' or '[' (a call or a literal).
func appendValue(lv Level, sp []span, b []byte, s, e int, quoted bool) []span {
	if lv == Precise {
		if !generatedValue(b[s:e]) || identifier(b[s:e]) {
			return sp
		}
		if !quoted && e < len(b) && (b[e] == '(' || b[e] == '{' || b[e] == '[') {
			return sp
		}
	}
	return appendSpan(sp, b, s, e)
}

// generatedValue is gitleaks' generic-api-key judgement of a value after a
// secret name, made stricter: 16 to 150 token characters (no spaces,
// quotes, "$" or braces: not an expression or a template), letters and
// digits, and an entropy of at least 3.5 bits per byte (gitleaks'
// threshold).
func generatedValue(v []byte) bool {
	if len(v) < 16 || len(v) > 150 || run(v, 0, tokenChars) != len(v) {
		return false
	}
	return hasKinds(v, needDigit|needLetter) && entropy(v) >= 3.5
}

// codeLike reports a value shaped like a camelCase identifier made of
// words (testEd25519PrivateKey, hexECTestPKCS8Key, encryptionKey1024):
// letters of both cases, digits, '_' and '.', starting with a letter,
// whose words are mostly three letters or longer. A generated key splits
// into many one- and two-letter pieces (q2x9Wv4k1Zp0aBcDe); keys in one
// case (AWS, hex) are never code-like.
func codeLike(v []byte) bool {
	if len(v) == 0 || !isAlpha(v[0]) || !hasKinds(v, needUpper|needLower) {
		return false
	}
	words, short, n := 0, 0, 0 // letter words, those under 3 letters, letters in the current word
	end := func() {
		if n > 0 {
			words++
			if n < 3 {
				short++
			}
		}
		n = 0
	}
	for i, c := range v {
		switch {
		case isUpper(c):
			// fooBar, or the last capital of an acronym: ECKey.
			if i > 0 && (isLower(v[i-1]) || (isUpper(v[i-1]) && i+1 < len(v) && isLower(v[i+1]))) {
				end()
			}
			n++
		case isLower(c):
			n++
		case isDigit(c), c == '_', c == '.':
			end()
		default:
			return false
		}
	}
	end()
	return 3*short < words
}

// appendSpan adds [s, e) unless it is empty or already just a Marker, which
// keeps redaction idempotent.
func appendSpan(sp []span, b []byte, s, e int) []span {
	if e <= s || bytes.Equal(b[s:e], markerBytes) {
		return sp
	}
	return append(sp, span{s, e})
}

func atLineEnd(b []byte, e int) bool {
	return e == len(b) || b[e] == '\n' || b[e] == '\r' || b[e] == '\\' || b[e] == '"' || b[e] == '\''
}

// urlPassword handles b[i] == ':' of "scheme://user:password@host" and
// redacts the password. At Precise a placeholder stays (see placeholder).
func urlPassword(b []byte, i int, sp []span, lv Level) []span {
	if !bytes.HasPrefix(b[i+1:], []byte("//")) {
		return sp
	}
	s := i + 3
	lim := min(len(b), s+256)
	colon := -1
	for k := s; k < lim; k++ {
		switch c := b[k]; {
		case c == '@':
			if colon < 0 || k == colon+1 {
				return sp
			}
			if lv == Precise && (placeholder(b[colon+1:k]) || k+1 >= len(b) || !(isAlnum(b[k+1]) || b[k+1] == '[')) {
				return sp
			}
			return appendSpan(sp, b, colon+1, k)
		case c == ':' && colon < 0:
			colon = k
		case c <= ' ' || bytes.IndexByte([]byte("/?#\"'<>\\"), c) >= 0:
			return sp
		}
	}
	return sp
}

// placeholder reports a URL password that stands for one rather than being
// one: a template ($VAR, ${x}, %s, <pass>, {{x}}, [x], ***), one character
// repeated, or, once percent-decoded, a few letters without digits such as
// "password", "pass", "My Pass" or "secret".
func placeholder(p []byte) bool {
	if len(p) < 3 || bytes.IndexByte([]byte("$%{<[*"), p[0]) >= 0 || bytes.Contains(p, []byte("{{")) {
		return true
	}
	if bytes.Count(p, p[:1]) == len(p) {
		return true
	}
	letters := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case isAlpha(c):
			letters++
		case c == '%' && i+2 < len(p):
			i += 2 // an escaped separator ("%20", "%2F")
		case c == '-' || c == '_' || c == '.' || c == '/':
		default:
			return false
		}
	}
	return letters <= 12
}

// pemBody handles b[i] == '-' of "-----BEGIN ... PRIVATE KEY-----": it
// returns the body up to "-----END", or to the end of b with open set. At
// Precise the body must hold key material (a run of 40 base64 bytes), so a
// document that only names the header keeps its "...".
func pemBody(b []byte, i int, lv Level) (s, e int, open, ok bool) {
	const begin = "-----BEGIN "
	if !bytes.HasPrefix(b[i:], []byte(begin)) {
		return 0, 0, false, false
	}
	h := i + len(begin)
	x := bytes.Index(b[h:min(len(b), h+64)], []byte("-----"))
	if x < 0 || !bytes.Contains(b[h:h+x], []byte("PRIVATE KEY")) {
		return 0, 0, false, false
	}
	s = h + x + 5
	e, open = len(b), true
	if y := bytes.Index(b[s:], []byte("-----END")); y >= 0 {
		e, open = s+y, false
	}
	if lv == Precise && !hasRun(b[s:e], base64Chars, 40) {
		return 0, 0, false, false
	}
	return s, e, open, true
}

var base64Chars = class("a-z", "A-Z", "0-9", "+/=")

// pemLines appends a span for every run of key material in the body
// b[s:e], line by line, so a diff or source file that holds the block keeps
// its lines, its diff markers ("+" or "-" first on a line), its quotes and
// its "\n" escapes.
func pemLines(b []byte, s, e int, sp []span) []span {
	for k := s; k < e; {
		if !base64Chars[b[k]] {
			k++
			continue
		}
		x := run(b[:e], k, base64Chars)
		from := k
		if (b[k] == '+' || b[k] == '-') && (k == 0 || b[k-1] == '\n') {
			from++ // a diff marker
		}
		if k > 0 && b[k-1] == '\\' {
			from++ // the letter of an escape such as \n
		}
		if x-from >= 4 && !(from > 0 && b[from-1] == '[' && string(b[from:x]) == "REDACTED") {
			sp = append(sp, span{from, x})
		}
		k = x
	}
	return sp
}

// hasRun reports a run of at least n bytes of class c in b.
func hasRun(b []byte, c *charClass, n int) bool {
	k := 0
	for _, x := range b {
		if c[x] {
			k++
			if k >= n {
				return true
			}
		} else {
			k = 0
		}
	}
	return false
}
