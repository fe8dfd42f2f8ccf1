//go:build unix

package main

import (
	"bufio"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// started is a fake running in the background whose stdout is read line by line.
type started struct {
	cmd   *exec.Cmd
	lines chan string // closed at stdout EOF
	done  chan struct{}
	state *exitState
}

type exitState struct {
	code   int
	signal syscall.Signal
}

func start(t *testing.T, args []string) *started {
	t.Helper()
	cmd := newCmd(t, args)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: cmd, lines: make(chan string, 1000), done: make(chan struct{}), state: &exitState{}}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		_ = cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		s.state.code = ws.ExitStatus()
		if ws.Signaled() {
			s.state.signal = ws.Signal()
		}
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	return s
}

// waitFor reads lines until one contains substr; it returns all lines read.
func (s *started) waitFor(t *testing.T, substr string) []string {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("stdout ended before %q; got %v", substr, got)
			}
			got = append(got, l)
			if strings.Contains(l, substr) {
				return got
			}
		case <-timeout:
			t.Fatalf("timeout waiting for %q; got %v", substr, got)
		}
	}
}

func (s *started) rest(t *testing.T) []string {
	t.Helper()
	var got []string
	for l := range s.lines {
		got = append(got, l)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("process did not exit")
	}
	return got
}

func (s *started) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

func TestSIGINTExitsZeroWithoutResult(t *testing.T) {
	w := newWorkspace(t, "")
	s := start(t, w.args("Reply fake:hang"))
	s.waitFor(t, `"iteration_start"`)
	s.signal(t, syscall.SIGINT)
	rest := s.rest(t)
	if s.state.code != 0 || len(rest) != 0 {
		t.Errorf("got exit %d and lines %v, want 0 and nothing", s.state.code, rest)
	}
}

func TestSIGTERMIgnoredOnceThenExit1(t *testing.T) {
	w := newWorkspace(t, "")
	s := start(t, w.args("Reply fake:hang?after_events=true"))
	s.waitFor(t, `"Working on it"`)
	s.signal(t, syscall.SIGTERM)
	select {
	case <-s.done:
		t.Fatalf("exited after one SIGTERM (code %d)", s.state.code)
	case <-time.After(300 * time.Millisecond): // a bounded negative check, not synchronisation
	}
	// Standard signals do not queue; keep sending until the second one is counted.
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		s.signal(t, syscall.SIGTERM)
		select {
		case <-s.done:
			done = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no exit after repeated SIGTERM")
		}
	}
	if rest := s.rest(t); s.state.code != 1 || len(rest) != 0 {
		t.Errorf("got exit %d and lines %v, want 1 and nothing", s.state.code, rest)
	}
}

func TestSIGTERMThenResponse(t *testing.T) {
	w := newWorkspace(t, "a_text_pong")
	s := start(t, w.args("--auto-approve", "false", "Reply fake:sigterm_then_response"))
	got := s.waitFor(t, `"iteration_start"`)
	s.signal(t, syscall.SIGTERM)
	got = append(got, s.rest(t)...)
	if s.state.code != 0 {
		t.Errorf("got exit %d, want 0", s.state.code)
	}
	want := shapes(t, readFile(t, "testdata/recordings/f_sigterm_then_response/stdout.jsonl"))
	if g := shapes(t, strings.Join(got, "\n")); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("got shapes\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

func TestCompletedThenSigterm(t *testing.T) {
	w := newWorkspace(t, "")
	s := start(t, w.args("Reply fake:completed_then_sigterm"))
	rest := s.rest(t)
	if s.state.signal != syscall.SIGTERM || !strings.Contains(rest[len(rest)-1], `"finishReason":"completed"`) {
		t.Errorf("got signal %v, last line %s", s.state.signal, rest[len(rest)-1])
	}
}

var grandchildRe = regexp.MustCompile(`grandchild pid (\d+)`)

func TestGrandchildHoldsStdio(t *testing.T) {
	w := newWorkspace(t, "")
	cmd := newCmd(t, w.args("Reply fake:grandchild_holds_stdio?seconds=30"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	parentPid := cmd.Process.Pid
	errLine := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := grandchildRe.FindStringSubmatch(sc.Text()); m != nil {
				errLine <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var pid int
	select {
	case s := <-errLine:
		pid, _ = strconv.Atoi(s)
	case <-time.After(10 * time.Second):
		t.Fatal("no grandchild pid line")
	}
	if pid <= 1 {
		t.Fatalf("bad grandchild pid %d", pid)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatalf("grandchild %d: %v", pid, err)
	}
	if pgid != parentPid && pgid != mustPgid(t, parentPid) {
		t.Errorf("grandchild pgid %d differs from the parent's", pgid)
	}
	// The parent exits 0 by itself; stdout stays open because the grandchild holds it.
	ps, err := cmd.Process.Wait()
	if err != nil || ps.ExitCode() != 0 {
		t.Fatalf("parent: %v exit %d", err, ps.ExitCode())
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("grandchild gone after the parent exited: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 1<<16)
		var all []byte
		for !strings.Contains(string(all), `"run_result"`) {
			n, err := stdout.Read(b)
			all = append(all, b[:n]...)
			if err != nil {
				break
			}
		}
		got <- string(all)
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, `"finishReason":"completed"`) {
			t.Errorf("no completed result in %s", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no run_result")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func mustPgid(t *testing.T, pid int) int {
	t.Helper()
	// The parent is dead by now only after Wait; before that its pgid is readable.
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return -1
	}
	return pgid
}
