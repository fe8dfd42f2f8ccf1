package redact

import (
	"strings"
	"testing"
)

// TestWithLearnsLiterals: With returns a Redactor that redacts the new literal at every level
// and still the old ones, leaves the original alone, and is the same Redactor when nothing new
// would be redacted.
func TestWithLearnsLiterals(t *testing.T) {
	const old, learned = "old-plain-value-4711", "tok-refreshed-plain-0815"
	r := New([]string{old})
	w := r.With(learned, "", "short")
	in := "a " + old + " b " + learned + " c"
	for name, got := range map[string]string{"Text": w.Text(in), "String": w.String(in)} {
		if strings.Contains(got, old) || strings.Contains(got, learned) {
			t.Errorf("%s = %q, want both literals redacted", name, got)
		}
	}
	if got := r.Text(in); !strings.Contains(got, learned) {
		t.Errorf("the original Redactor changed: %q", got)
	}
	if w.With(learned, old, "x") != w {
		t.Errorf("With of known or ignored literals built a new Redactor")
	}
	if got := (*Redactor)(nil).With(learned).Text(in); strings.Contains(got, learned) {
		t.Errorf("nil.With = %q, want the literal redacted", got)
	}
}

// TestSecretsFromJSONDeep: a document nested far deeper than any settings file yields what was
// found before the depth limit, without exhausting memory or the stack.
func TestSecretsFromJSONDeep(t *testing.T) {
	doc := `{"apiKey":"first-secret-value",` + `"x":` + strings.Repeat("[", 4<<20) + strings.Repeat("]", 4<<20) + `}`
	got := SecretsFromJSON([]byte(doc))
	if len(got) != 1 || got[0] != "first-secret-value" {
		t.Errorf("got %q, want [first-secret-value]", got)
	}
}
