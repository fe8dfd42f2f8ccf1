package mcpsession

import (
	"os"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Eventually polls cond every 20 ms until it holds or d passed (polling an external condition —
// a process, a file, a container — not synchronising goroutines of the test).
func Eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Str is the string at key k of a structuredContent object ("" when absent or not a string).
func Str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// Num is the number at key k of a structuredContent object (0 when absent).
func Num(m map[string]any, k string) float64 {
	f, _ := m[k].(float64)
	return f
}

// Dig walks nested JSON objects along path; nil when a step is missing or not an object.
func Dig(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

// WantOK fails the test unless the call succeeded, showing the failure's kind, message and
// stderr tail.
func WantOK(t testing.TB, res *mcp.CallToolResult, sc map[string]any) {
	t.Helper()
	if res.IsError || sc["ok"] != true {
		t.Fatalf("got failure %s: %s\nstderrTail: %s", Str(sc, "kind"), Str(sc, "message"), Str(sc, "stderrTail"))
	}
}

// WantKind fails the test unless the call failed with the given kind.
func WantKind(t testing.TB, res *mcp.CallToolResult, sc map[string]any, kind string) {
	t.Helper()
	if !res.IsError || sc["ok"] != false {
		t.Fatalf("got ok result (text %q), want kind %s", Str(sc, "text"), kind)
	}
	if got := Str(sc, "kind"); got != kind {
		t.Fatalf("got kind %q (message %q), want %q", got, Str(sc, "message"), kind)
	}
}

// Tail is the last n bytes of s, marked with "…" when cut.
func Tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ReadFile is the content of p; the test fails when it cannot be read.
func ReadFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
