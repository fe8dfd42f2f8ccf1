package review

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPathBytes bounds a finding's path; git itself refuses longer ones on most systems.
const maxPathBytes = 4096

// scheme matches a URI scheme or a drive letter at the start of a path ("file:", "https:",
// "C:"): a path relative to the repository never starts with one.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// SafePath makes a finding's path repository-relative: slashes only, cleaned, inside the
// repository whose work tree is root. An absolute path under root loses that prefix; "./" and
// the "a/" / "b/" prefixes of a diff header are dropped. It returns "" and why when the path
// cannot be made safe — absolute elsewhere, a ".." that leaves the repository, a URI scheme or
// drive letter, a percent-encoded escape, a control or format character, invalid UTF-8, or
// longer than 4096 bytes — so the finding keeps its text and loses its location. The reason
// never quotes the path. A backslash counts as a separator (a Windows path from the model), so
// "..\..\x" is the escape it looks like.
func SafePath(p, root string) (safe, why string) {
	p = strings.TrimSpace(p)
	switch {
	case p == "":
		return "", ""
	case len(p) > maxPathBytes:
		return "", "the path is longer than 4096 bytes"
	case !utf8.ValidString(p):
		return "", "the path is not valid UTF-8"
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0:
		return "", "the path holds a control or format character"
	case strings.Contains(p, "%") && unescapes(p):
		return "", "the path is percent-encoded"
	}
	p = strings.ReplaceAll(p, "\\", "/")
	if scheme.MatchString(p) {
		return "", "the path is a URI or has a drive letter, not a path in the repository"
	}
	if strings.HasPrefix(p, "/") {
		r := strings.TrimRight(strings.ReplaceAll(root, "\\", "/"), "/")
		if r == "" || !strings.HasPrefix(p, r+"/") {
			return "", "the path is absolute and not under the reviewed work tree"
		}
		p = strings.TrimPrefix(p, r+"/")
	}
	for _, pre := range []string{"./", "a/", "b/"} {
		p = strings.TrimPrefix(p, pre)
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return "", "the path leaves the repository"
	}
	return p, ""
}

// unescapes reports whether p holds a valid percent-escape ("%2e", "%2F"): a SARIF viewer
// decodes those, so "%2e%2e/x" would name the parent of the repository there.
func unescapes(p string) bool {
	u, err := url.PathUnescape(p)
	return err == nil && u != p
}

// uriOf is a safe repository-relative path as a relative URI reference (RFC 3986): each
// segment percent-encoded, so a space, '#', '?' or '%' in a file name stays part of the path.
func uriOf(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
