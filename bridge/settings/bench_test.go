package settings

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkEnsureFreshNothingToDo is what every container call pays when its token outlives the run:
// one read and parse of providers.json.
func BenchmarkEnsureFreshNothingToDo(b *testing.B) {
	s := oauthStore(b, clineSignedIn(b, "http://127.0.0.1:9/v1", time.Now().Add(24*time.Hour)))
	until := time.Now().Add(10 * time.Minute)
	for b.Loop() {
		if _, err := s.EnsureFresh(b.Context(), Override{}, until, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseDeepCopy is the merge-back's parse of the hostile copy (4 MiB of nested "["): refused
// at depth 257, after reading 256 bytes of it.
func BenchmarkParseDeepCopy(b *testing.B) {
	deep := []byte(`{"a":` + strings.Repeat("[", maxFileSize-5))
	for b.Loop() {
		if _, err := parseObject(deep); err == nil {
			b.Fatal("accepted")
		}
	}
}
