//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestWarmRunsTheHeader: warm runs the command of its first stdin line in the line's environment
// and directory, framed as run does, and the program reads the rest of stdin, not one byte less.
func TestWarmRunsTheHeader(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "warm")
	cmd.Env = append(os.Environ(), asHelper+"=1")
	hdr := `{"args":["/bin/sh","-c","echo \"$WARM_X\"; pwd; cat"],"env":["WARM_X=from the header"],"dir":"` + dir + `"}` + "\n"
	cmd.Stdin = strings.NewReader(hdr + "the program's stdin\n")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("warm: %v", err)
	}
	var got strings.Builder
	for r := bytes.NewReader(out.Bytes()); r.Len() > 0; {
		stream, s, err := readFrame(r)
		if err != nil {
			t.Fatal(err)
		}
		if stream == 1 {
			got.WriteString(s)
		}
	}
	if want := "from the header\n" + dir + "\nthe program's stdin\n"; got.String() != want {
		t.Errorf("stdout %q, want %q", got.String(), want)
	}
}

// TestWarmWithoutHeader: a warm container whose stdin ends without a header runs nothing.
func TestWarmWithoutHeader(t *testing.T) {
	marker := t.TempDir() + "/ran"
	for _, in := range []string{"", `{"args":["/bin/touch","` + marker + `"]}`, "not json\n", `{"args":[]}` + "\n"} {
		cmd := exec.Command(os.Args[0], "warm")
		cmd.Env = append(os.Environ(), asHelper+"=1")
		cmd.Stdin = strings.NewReader(in)
		if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
			t.Errorf("stdin %q: %v, want exit 2", in, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a header without its newline ran")
	}
}
