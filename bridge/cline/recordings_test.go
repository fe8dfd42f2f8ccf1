package cline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the parser's output")

// recording is one folder of testdata/recordings: a real CLI run (see its README.md and docs/cline-cli.md).
type recording struct {
	name   string
	stdout []byte
	stderr []byte
	exit   int
	signal string
}

var (
	exitCodeRe = regexp.MustCompile(`(?m)^exit_code=(-?\d+)`)
	signalRe   = regexp.MustCompile(`(?m)^signal=(SIG[A-Z]+)`)
)

func loadRecordings(t testing.TB) []recording {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "recordings", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []recording
	for _, d := range dirs {
		out, err := os.ReadFile(filepath.Join(d, "stdout.jsonl"))
		if err != nil {
			continue // not a --json run
		}
		errb, err := os.ReadFile(filepath.Join(d, "stderr.txt"))
		if err != nil {
			t.Fatal(err)
		}
		ex, err := os.ReadFile(filepath.Join(d, "exit.txt"))
		if err != nil {
			t.Fatal(err)
		}
		r := recording{name: filepath.Base(d), stdout: out, stderr: errb, exit: -1}
		if m := exitCodeRe.FindSubmatch(ex); m != nil {
			r.exit, _ = strconv.Atoi(string(m[1]))
		}
		if m := signalRe.FindSubmatch(ex); m != nil {
			r.signal = string(m[1])
		}
		if r.exit == -1 && r.signal == "" {
			t.Fatalf("%s: exit.txt has neither exit_code nor signal", r.name)
		}
		recs = append(recs, r)
	}
	if len(recs) < 70 {
		t.Fatalf("got %d recordings, want the ~80 of testdata/recordings", len(recs))
	}
	return recs
}

func recordingByName(t testing.TB, name string) recording {
	t.Helper()
	for _, r := range loadRecordings(t) {
		if r.name == name {
			return r
		}
	}
	t.Fatalf("no recording %s", name)
	return recording{}
}

// feed writes data to w in chunks of the given size (0: all at once) and returns w's summary.
func parseChunks(data []byte, size int, rng *rand.Rand) Summary {
	p := NewParser(nil)
	for len(data) > 0 {
		n := len(data)
		switch {
		case rng != nil:
			n = min(len(data), 1+rng.IntN(4096))
		case size > 0:
			n = min(len(data), size)
		}
		p.Write(data[:n])
		data = data[n:]
	}
	p.Close()
	return p.Summary()
}

func scanStderr(data []byte) StderrSummary {
	var sc StderrScanner
	sc.Write(data)
	sc.Close()
	return sc.Summary()
}

func outcomeOf(r recording) Outcome {
	return Outcome{
		ExitCode: r.exit, Signal: r.signal,
		Stdout: parseChunks(r.stdout, 0, nil), Stderr: scanStderr(r.stderr),
	}
}

// golden is what testdata/golden/<name>.json holds for a recording.
type golden struct {
	Stdout  Summary       `json:"stdout"`
	Stderr  StderrSummary `json:"stderr"`
	Verdict Verdict       `json:"verdict"`
}

func TestRecordingsGolden(t *testing.T) {
	for _, r := range loadRecordings(t) {
		t.Run(r.name, func(t *testing.T) {
			o := outcomeOf(r)
			got, err := json.MarshalIndent(golden{Stdout: o.Stdout, Stderr: o.Stderr, Verdict: Classify(o)}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", r.name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("summary differs from %s (run go test -update and review the diff):\ngot:\n%s", path, got)
			}
		})
	}
}

func TestRecordingsChunkedFeeding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range loadRecordings(t) {
		t.Run(r.name, func(t *testing.T) {
			whole, err := json.Marshal(parseChunks(r.stdout, 0, nil))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				size int
				rng  *rand.Rand
			}{{"1-byte", 1, nil}, {"7-byte", 7, nil}, {"random", 0, rng}} {
				got, _ := json.Marshal(parseChunks(r.stdout, tc.size, tc.rng))
				if !bytes.Equal(got, whole) {
					t.Errorf("%s chunks: got %s, want %s", tc.name, got, whole)
				}
			}
			// The same for stderr.
			wholeErr, _ := json.Marshal(scanStderr(r.stderr))
			var sc StderrScanner
			for _, b := range r.stderr {
				sc.Write([]byte{b})
			}
			sc.Close()
			gotErr, _ := json.Marshal(sc.Summary())
			if !bytes.Equal(gotErr, wholeErr) {
				t.Errorf("stderr 1-byte chunks: got %s, want %s", gotErr, wholeErr)
			}
		})
	}
}

// TestRecordingsLineCounts checks the parser against an independent count of each stdout file.
func TestRecordingsLineCounts(t *testing.T) {
	for _, r := range loadRecordings(t) {
		t.Run(r.name, func(t *testing.T) {
			want := 0
			sc := bufio.NewScanner(bytes.NewReader(r.stdout))
			sc.Buffer(nil, 64<<20)
			for sc.Scan() {
				if len(bytes.TrimSpace(sc.Bytes())) > 0 {
					want++
				}
			}
			s := parseChunks(r.stdout, 0, nil)
			if s.Lines != want {
				t.Errorf("got %d lines, want %d", s.Lines, want)
			}
			if s.JSONLines+s.NonJSONLines+s.OversizeLines != s.Lines {
				t.Errorf("got json %d + non-json %d + oversize %d, want %d lines", s.JSONLines, s.NonJSONLines, s.OversizeLines, s.Lines)
			}
		})
	}
}
