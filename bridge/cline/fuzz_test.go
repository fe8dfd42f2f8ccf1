package cline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParser feeds arbitrary bytes, split into arbitrary writes, to the stream parser and the
// stderr scanner: they must never panic, their summaries must stay within the documented bounds
// whatever the input (bounded memory), and classifying the outcome must never panic either.
func FuzzParser(f *testing.F) {
	// Seeds: real recordings, and the shapes that once broke parsers.
	recs, _ := filepath.Glob(filepath.Join("testdata", "recordings", "*", "stdout.jsonl"))
	for _, p := range recs {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b, 7)
		}
	}
	f.Add([]byte(`{"type":"run_result","finishReason":"completed","text":"PONG"}`+"\n"), 3)
	f.Add([]byte(`{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"run_commands","output":[{"query":"x","result":"y","success":false}]}}`), 1)
	f.Add([]byte("\xff\xfe{\"type\":\n\n\r\n{}}}}"), 2)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		var events int
		p := NewParser(func(Event) { events++ })
		var sc StderrScanner
		if split <= 0 || split > len(in) {
			split = len(in)
		}
		for rest := in; len(rest) > 0; {
			n := min(split, len(rest))
			if w, err := p.Write(rest[:n]); err != nil || w != n {
				t.Fatalf("Write: %d %v", w, err)
			}
			_, _ = sc.Write(rest[:n])
			rest = rest[n:]
		}
		_ = p.Close()
		_ = sc.Close()
		s := p.Summary()
		if len(s.Errors) > maxKept || len(s.TopErrors) > maxKept || len(s.Tools) > maxDistinct ||
			len(s.FailedTools) > maxDistinct || len(s.MutatingSuccesses) > maxDistinct {
			t.Fatalf("unbounded summary lists: %+v", s)
		}
		if b, err := json.Marshal(s); err != nil || len(b) > 4<<20 {
			t.Fatalf("summary of %d input bytes is %d bytes (%v), want bounded", len(in), len(b), err)
		}
		_ = Classify(Outcome{ExitCode: 1, Stdout: s, Stderr: sc.Summary(), TimeoutSeconds: 5, Analysis: true})
		_ = Classify(Outcome{ExitCode: 0, Stdout: s, Stderr: sc.Summary()})
	})
}
