//go:build linux

package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// asHelper makes the test binary the helper (its main) when the tests start it with this
// variable; "child" as its first argument makes it the program the helper runs.
const asHelper = "CLINE_MCP_K8S_HELPER_TEST"

func TestMain(m *testing.M) {
	if os.Getenv(asHelper) == "1" {
		if len(os.Args) > 1 && os.Args[1] == "child" {
			child(os.Args[2:])
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is the program under the wrapper: it writes to both streams and then, as asked, exits
// with a status or waits for a signal and says which one came.
func child(args []string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	fmt.Fprintln(os.Stderr, "warming up")
	fmt.Println("ready")
	switch args[0] {
	case "exit7":
		os.Exit(7)
	case "wait":
		s := <-sigs
		fmt.Println("got", s)
		if s == syscall.SIGINT {
			os.Exit(130)
		}
		os.Exit(143)
	}
	os.Exit(2)
}

// helperRun starts `helper run -- <this binary> child args` and returns it with a reader of
// its framed stdout.
func helperRun(t *testing.T, prog ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"run", "--"}, prog...)...)
	if len(prog) > 0 && prog[0] == "child" {
		cmd.Args = append([]string{self, "run", "--", self}, prog...)
	}
	cmd.Env = append(os.Environ(), asHelper+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

// readFrame reads one frame of the wrapper's stream.
func readFrame(r io.Reader) (byte, string, error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, "", err
	}
	b := make([]byte, binary.BigEndian.Uint32(h[4:]))
	_, err := io.ReadFull(r, b)
	return h[0], string(b), err
}

// collect reads frames into stdout and stderr until the stream ends or until (when non-empty)
// stdout holds until.
func collect(t *testing.T, r io.Reader, until string) (stdout, stderr string) {
	t.Helper()
	var o, e strings.Builder
	for until == "" || !strings.Contains(o.String(), until) {
		s, p, err := readFrame(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("a broken frame: %v", err)
		}
		switch s {
		case 1:
			o.WriteString(p)
		case 2:
			e.WriteString(p)
		default:
			t.Fatalf("a frame of stream %d", s)
		}
	}
	return o.String(), e.String()
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode()
}

// TestRunFramesAndExits: the program's stdout and stderr arrive as separate streams in the one
// framed stdout, and its exit status is the helper's; a program that does not exist is 127.
func TestRunFramesAndExits(t *testing.T) {
	cmd, r := helperRun(t, "child", "exit7")
	out, errs := collect(t, r, "")
	if out != "ready\n" || errs != "warming up\n" {
		t.Errorf("got stdout %q stderr %q, want ready and warming up", out, errs)
	}
	if code := exitCode(t, cmd); code != 7 {
		t.Errorf("got exit %d, want 7", code)
	}
	cmd, r = helperRun(t, "/no/such/program")
	if _, errs := collect(t, r, ""); !strings.Contains(errs, "/no/such/program") {
		t.Errorf("got stderr %q, want the helper's message, framed", errs)
	}
	if code := exitCode(t, cmd); code != 127 {
		t.Errorf("a missing program: got exit %d, want 127", code)
	}
}

// TestRunTurnsSIGTERMIntoSIGINT: the kubelet's SIGTERM reaches the program as SIGINT (the CLI
// ends a turn cleanly on it), and the program's status is the helper's.
func TestRunTurnsSIGTERMIntoSIGINT(t *testing.T) {
	cmd, r := helperRun(t, "child", "wait")
	collect(t, r, "ready")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out, _ := collect(t, r, "")
	if out != "got interrupt\n" {
		t.Errorf("got %q, want the program to see SIGINT", out)
	}
	if code := exitCode(t, cmd); code != 130 {
		t.Errorf("got exit %d, want 130", code)
	}
}

// TestUntarSeveral: `untar A B` unpacks two archives sent one after the other on stdin, each
// into its directory (the fill container gets every mount on one stream).
func TestUntarSeveral(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	var in bytes.Buffer
	for _, name := range []string{"a.txt", "b.txt"} {
		tw := tar.NewWriter(&in)
		if err := tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: "./" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "untar", a, b)
	cmd.Env, cmd.Stdin = append(os.Environ(), asHelper+"=1"), &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("untar: %v\n%s", err, out)
	}
	for _, p := range []string{filepath.Join(a, "a.txt"), filepath.Join(b, "b.txt")} {
		if got, err := os.ReadFile(p); err != nil || string(got) != "hi" {
			t.Errorf("%s: got %q, %v; want hi", p, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(a, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the second archive went into the first directory: %v", err)
	}
}

// TestWaitListening: run --wait returns once the address accepts connections (the sidecar holds
// the credential), and gives up with an error after its bound when nothing listens.
func TestWaitListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := waitListening(addr, time.Second); err != nil {
		t.Errorf("a listening address: %v", err)
	}
	ln.Close()
	if err := waitListening(addr, 200*time.Millisecond); err == nil {
		t.Error("an address nobody listens on was taken as ready")
	}
}
