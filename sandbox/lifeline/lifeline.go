// Package lifeline makes sure that what a server started does not outlive it, however the server
// dies — SIGKILL, the out-of-memory killer, a client that is force-quit. The server starts one
// watchdog process (its own binary, re-executed) and holds the only write end of a pipe whose read
// end the watchdog holds. The server tells the watchdog, one line per event, what it starts and
// finishes (process groups, private directories); the watchdog keeps that list. When the pipe
// reaches EOF — the kernel closes the write end when the server exits by any means — the watchdog
// ends what is still listed and exits.
//
// The watchdog runs in its own session and ignores SIGINT, SIGTERM and SIGHUP, so a signal to the
// server's process group (a terminal's Ctrl-C, a client stopping its server) does not take the
// lifeline down with it; only the pipe ends it. Its environment is chosen by the caller (it needs
// no secrets) and its stdout is the null device: stdout is the MCP wire.
//
// Protocol (one line each, written under a mutex): "+<kind> <value>" starts tracking, "-<kind>
// <value>" stops. Kinds are single letters (Group, Container, Dir); values carry no newline.
//
// A process group is recorded with the identity of its leader ("<pgid>:<start time>", see
// sandbox/proc), and the watchdog kills it only after re-checking that identity (GroupToKill):
// after a crash the leader's pid may belong to somebody else's process by the time the lifeline
// closes.
package lifeline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// Kinds of tracked things.
const (
	// Group is a process group id (Unix): the watchdog sends SIGKILL to the whole group.
	Group = "g"
	// Dir is a private directory (a call's temp dir with its settings copy): removed without
	// following symlinks.
	Dir = "d"
	// Container is a container run id: when any is tracked, the watchdog removes every
	// container of the server's instance.
	Container = "c"
	// Orderly is written by Close before the pipe closes: the server ended on its own and
	// cleaned up. Without it the watchdog knows the server died (killed, out of memory).
	Orderly = "o"
)

// Lifeline is the server's end. A nil *Lifeline is valid and tracks nothing, for platforms and
// configurations without a watchdog.
type Lifeline struct {
	mu     sync.Mutex
	w      *os.File
	cmd    *exec.Cmd
	closed bool
	done   chan struct{}
}

// Start launches the watchdog: argv[0] with argv[1:], the environment env, the pipe's read end as
// file descriptor 3, stdin and stdout on the null device and stderr on stderr (nil: the null
// device). The watchdog must call Watch on fd 3 (see FD).
func Start(argv, env []string, stderr io.Writer) (*Lifeline, error) {
	if len(argv) == 0 {
		return nil, errors.New("lifeline: no watchdog command")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("lifeline pipe: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{r}
	detach(cmd)
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("lifeline: start watchdog %s: %w", argv[0], err)
	}
	r.Close() // only the watchdog may hold the read end, only we the write end
	l := &Lifeline{w: w, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(l.done)
	}()
	return l, nil
}

// FD is the file descriptor on which the watchdog finds the lifeline.
const FD = 3

// Track tells the watchdog about something to end if the server dies; the returned func tells it
// that the thing is gone (call it after the group was killed or the directory removed). Safe for
// concurrent use. A failed write (the watchdog is gone) is ignored: the server's own cleanup still
// runs, the lifeline only backs it up.
func (l *Lifeline) Track(kind, value string) (untrack func()) {
	if l == nil || strings.ContainsAny(value, "\n\r") || value == "" {
		return func() {}
	}
	l.send("+" + kind + " " + value + "\n")
	var once sync.Once
	return func() { once.Do(func() { l.send("-" + kind + " " + value + "\n") }) }
}

// TrackGroup tracks process group pgid, whose leader (the process with pid pgid) must be alive:
// the value records the leader's start time beside the id, so the watchdog can tell the group
// from a later process that got the same pid (GroupToKill). A leader whose start time cannot be
// read is recorded with 0, which the watchdog never kills.
func (l *Lifeline) TrackGroup(pgid int) (untrack func()) {
	start, err := proc.StartTime(pgid)
	if err != nil {
		start = 0
	}
	return l.Track(Group, strconv.Itoa(pgid)+":"+strconv.FormatUint(start, 10))
}

// errNotOurs is wrapped by GroupToKill when the group must be left alone.
var errNotOurs = errors.New("not the recorded process group")

// GroupToKill parses a tracked Group value and decides, just before the kill, whether the group
// is still the one that was tracked. It returns the pgid to kill when
//   - the process with pid pgid has the recorded start time (the leader still runs), or
//   - no process has that pid (the leader exited): while any member of group pgid lives, the
//     kernel hands out neither the pid nor the group id again (Linux, macOS), so the group that
//     still exists is the tracked one, and an empty group makes the kill a no-op;
//
// and an error otherwise: another process now has the pid (the leader exited and its pid was
// reused, typical after a crash), the start time was never recorded, or it cannot be read now.
// Only the instant between this check and the kill is left open, in which the pid would have to
// be freed and handed out again.
func GroupToKill(value string) (int, error) {
	id, rec, ok := strings.Cut(value, ":")
	pgid, err1 := strconv.Atoi(id)
	start, err2 := strconv.ParseUint(rec, 10, 64)
	if !ok || err1 != nil || err2 != nil || pgid <= 1 {
		return 0, fmt.Errorf("process group %q: malformed", value)
	}
	if start == 0 {
		return 0, fmt.Errorf("process group %d: %w: its leader's start time was not recorded", pgid, errNotOurs)
	}
	now, err := proc.StartTime(pgid)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return pgid, nil
	case err != nil:
		return 0, fmt.Errorf("process group %d: %w: its leader cannot be identified: %v", pgid, errNotOurs, err)
	case now != start:
		return 0, fmt.Errorf("process group %d: %w: pid %d now belongs to a process started at %d, not %d", pgid, errNotOurs, pgid, now, start)
	}
	return pgid, nil
}

func (l *Lifeline) send(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		_, _ = io.WriteString(l.w, line)
	}
}

// Close is the orderly end: it says so (Orderly) and closes the write end — the watchdog ends
// whatever is still tracked (nothing, after a clean shutdown) and exits — and waits up to wait
// for it to exit.
func (l *Lifeline) Close(wait time.Duration) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	_, _ = io.WriteString(l.w, "+"+Orderly+" exit\n")
	l.closed = true
	err := l.w.Close()
	l.mu.Unlock()
	select {
	case <-l.done:
	case <-time.After(wait):
		return fmt.Errorf("lifeline: watchdog %d did not exit within %v", l.cmd.Process.Pid, wait)
	}
	return err
}

// Pid is the watchdog's process id.
func (l *Lifeline) Pid() int {
	if l == nil {
		return 0
	}
	return l.cmd.Process.Pid
}

// Watch reads the lifeline until EOF (or a read error, which means the same: the server is gone)
// and returns what was still tracked then, by kind, in the order it was tracked.
func Watch(r io.Reader) map[string][]string {
	live := map[string]map[string]int{}
	seq := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 3 || line[2] != ' ' {
			continue
		}
		op, kind, value := line[0], line[1:2], line[3:]
		if live[kind] == nil {
			live[kind] = map[string]int{}
		}
		switch op {
		case '+':
			seq++
			live[kind][value] = seq
		case '-':
			delete(live[kind], value)
		}
	}
	out := map[string][]string{}
	for kind, vals := range live {
		list := slices.Collect(maps.Keys(vals))
		slices.SortFunc(list, func(a, b string) int { return vals[a] - vals[b] }) // oldest first
		if len(list) > 0 {
			out[kind] = list
		}
	}
	return out
}
