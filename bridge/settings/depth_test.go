package settings

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// TestParseObjectRefusesDeepNesting: a run's copy of 4 MiB of nested "[" used
// to overflow the Go stack of the server in the merge-back — a fatal error no recover catches.
// Every shape of deep nesting is refused with an error naming the limit; nesting up to the limit
// still parses.
func TestParseObjectRefusesDeepNesting(t *testing.T) {
	for name, doc := range map[string]string{
		"4 MiB of [":            `{"a":` + strings.Repeat("[", maxFileSize-5),
		"arrays just too deep":  `{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + "}",
		"objects just too deep": strings.Repeat(`{"k":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
		"mixed":                 `{"providers":` + strings.Repeat(`[{"x":`, maxDepth) + "null" + strings.Repeat("}]", maxDepth) + "}",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseObject([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), "nested deeper than 256") {
				t.Fatalf("got error %v, want the depth limit", err)
			}
		})
	}
	ok := strings.Repeat(`{"k":`, maxDepth) + "1" + strings.Repeat("}", maxDepth)
	if _, err := parseObject([]byte(ok)); err != nil {
		t.Errorf("a document nested exactly %d deep: got %v, want it parsed", maxDepth, err)
	}
}

// TestParseObjectRefusesOversize: the size limit holds in the parser itself, whoever read the bytes.
func TestParseObjectRefusesOversize(t *testing.T) {
	doc := `{"a":"` + strings.Repeat("x", maxFileSize) + `"}`
	if _, err := parseObject([]byte(doc)); err == nil || !strings.Contains(err.Error(), "byte limit") {
		t.Fatalf("got %v, want the size limit", err)
	}
}

// TestMergeDeepCopyKeepsServing: the hole as the server meets it — a container leaves a deeply
// nested copy; the merge-back warns and writes nothing, and the process lives on.
func TestMergeDeepCopyKeepsServing(t *testing.T) {
	for _, host := range []bool{false, true} {
		s, fs := memStore(t)
		pong := testdata(t, "a_text_pong.before.json")
		put(t, s, pong)
		cp, err := s.newCopy("", Override{}, host)
		if err != nil {
			t.Fatal(err)
		}
		deep := `{"providers":{"openai-compatible":` + strings.Repeat("[", maxFileSize-40) + "}}"
		if err := afero.WriteFile(fs, cp.SettingsPath, []byte(deep), 0o600); err != nil {
			t.Fatal(err)
		}
		warns := s.MergeAllowed(context.Background(), cp, nil)
		if len(warns) != 1 || !strings.Contains(warns[0], "nested deeper than") {
			t.Errorf("host copy %v: warnings %q, want one naming the depth limit", host, warns)
		}
		if got, _ := afero.ReadFile(fs, s.Path); !bytes.Equal(got, pong) || fs.renames != 0 {
			t.Errorf("host copy %v: the user's file changed:\n%s", host, got)
		}
		_ = cp.Close()
	}
}

// FuzzParseObjectDeep builds nested inputs from a recipe (which opener each level uses, how deep,
// what sits at the bottom and whether the closers are complete) so the fuzzer reaches depths a
// byte-level mutator never would. parseObject never panics or overflows, refuses exactly the
// documents nested deeper than maxDepth, and what it accepts re-encodes to a document that parses
// to an equal value.
func FuzzParseObjectDeep(f *testing.F) {
	f.Add(uint16(300), []byte("[{"), "1", true)
	f.Add(uint16(256), []byte("{"), `"x"`, true)
	f.Add(uint16(255), []byte("[[{"), "null", true)
	f.Add(uint16(4000), []byte("["), "", false)
	f.Add(uint16(1), []byte("{"), "[]", true)
	f.Fuzz(func(t *testing.T, depth uint16, openers []byte, bottom string, closed bool) {
		if len(openers) == 0 {
			openers = []byte("[")
		}
		n := int(depth)
		var b, closers strings.Builder
		b.WriteString(`{"top":`)
		for i := range n {
			if openers[i%len(openers)]&1 == 0 {
				b.WriteString("[")
				closers.WriteString("]")
			} else {
				b.WriteString(`{"k":`)
				closers.WriteString("}")
			}
		}
		b.WriteString(bottom)
		if closed {
			c := []byte(closers.String())
			for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
				c[i], c[j] = c[j], c[i]
			}
			b.Write(c)
			b.WriteString("}")
		}
		doc := []byte(b.String())
		o, err := parseObject(doc)
		if n+1 > maxDepth && err == nil {
			t.Fatalf("a document nested %d deep was accepted", n+1)
		}
		if err != nil {
			return
		}
		again, err := parseObject(o.encode())
		if err != nil || !equal(o, again) {
			t.Fatalf("re-encoding changed the document (%v)", err)
		}
	})
}
