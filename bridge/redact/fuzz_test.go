package redact

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// FuzzRedact checks that redaction never panics, is idempotent, and that a
// Tail fed the same input in two pieces stays valid and bounded.
func FuzzRedact(f *testing.F) {
	for _, c := range secretCorpus {
		f.Add(c.in, 3)
	}
	for _, c := range negativeCorpus {
		f.Add(c, 1)
	}
	f.Add("\"apiKey\\\":\\\"x\"\\", 2)
	f.Add("-----BEGIN EC PRIVATE KEY-----\nabc\n", 5)
	f.Add("Bearer Bearer sk-aaaaaa1 KEY=KEY=v\xff\xfe", 4)
	r := New(corpusLiterals)
	f.Fuzz(func(t *testing.T, in string, split int) {
		if got, want := appendValidUTF8(nil, []byte(in)), bytes.ToValidUTF8([]byte(in), []byte("\uFFFD")); !bytes.Equal(got, want) {
			t.Fatalf("appendValidUTF8(%q) = %q, want %q", in, got, want)
		}
		for _, redact := range []func(string) string{r.String, r.Text} {
			once := redact(in)
			if twice := redact(once); twice != once {
				t.Fatalf("not idempotent:\nin     %q\nonce   %q\ntwice  %q", in, once, twice)
			}
		}
		once := r.String(in)
		if twice := r.String(once); twice != once {
			t.Fatalf("not idempotent:\nin     %q\nonce   %q\ntwice  %q", in, once, twice)
		}
		tail := r.NewTail(50)
		split = min(max(split, 0), len(in))
		tail.Write([]byte(in[:split]))
		mid := tail.String()
		tail.Write([]byte(in[split:]))
		tail.Flush()
		for _, s := range []string{mid, tail.String()} {
			if !utf8.ValidString(s) || utf8.RuneCountInString(s) > 50 {
				t.Fatalf("tail %q: want valid UTF-8 of at most 50 runes", s)
			}
		}
	})
}
