package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// slowStdout is the client's end of the server's stdout: a pipe of one page, read at most
// rate bytes at a time with a pause between reads (a client that falls behind), or as fast as
// possible once fast is set. It keeps every byte with its offset.
type slowStdout struct {
	r    *os.File
	mu   sync.Mutex
	data []byte
	fast bool
	done chan struct{}
}

func (s *slowStdout) run(chunk int, pause time.Duration) {
	defer close(s.done)
	buf := make([]byte, 4096)
	for {
		s.mu.Lock()
		n := len(buf)
		if !s.fast {
			n = chunk
		}
		s.mu.Unlock()
		k, err := s.r.Read(buf[:n])
		s.mu.Lock()
		s.data = append(s.data, buf[:k]...)
		fast := s.fast
		s.mu.Unlock()
		if err != nil {
			return
		}
		if !fast {
			time.Sleep(pause)
		}
	}
}

func (s *slowStdout) consumed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.data)
}

// TestNoProgressAfterCancelWasRead: a client that reads slowly while the server reports
// progress (a heartbeat every 100 ms) makes the server's notifications wait in its queue. The
// client cancels the call. Every notification for the call's token must have started before
// the server read the cancel: the server logs the cancel once it handled it, and by then it can
// have written at most what the client had read plus what the pipe holds (its capacity), so a
// notification for the token that begins beyond that offset was written after the cancel. The
// test also shows that a backlog existed (the server dropped queued notifications at the cancel).
func TestNoProgressAfterCancelWasRead(t *testing.T) {
	e := prepareEnv(t)
	argv, environ := e.server([]string{"CLINE_MCP_TEST_PROGRESS_HEARTBEAT=100ms"})
	cmd := exec.Command(bins.ClineMCP, argv...)
	cmd.Env, cmd.Dir = environ, e.work
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Skipf("cannot shrink the pipe: %v", err)
	}
	capacity, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	var stderr lockedBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out := &slowStdout{r: r, done: make(chan struct{})}
	go out.run(64, 200*time.Millisecond) // ~0.3 KB/s; the heartbeat alone writes ~1.5 KB/s
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-out.done
	})
	send := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
		"name": "ask_cline", "arguments": map[string]any{"prompt": "go fake:hang", "cwd": e.work},
		"_meta": map[string]any{"progressToken": "tok-7"}}})
	// Let the backlog build: the pipe is full and notifications wait in the server's queue, so
	// the newest heartbeat the client has read is seconds older than the call.
	started := time.Now()
	if !mcpsession.Eventually(60*time.Second, func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		m := heartbeatAge.FindAllSubmatch(out.data, -1)
		if len(m) == 0 {
			return false
		}
		n, _ := strconv.Atoi(string(m[len(m)-1][1]))
		return time.Since(started).Seconds()-float64(n) >= 8 // the pipe holds ~3 s of them
	}) {
		t.Fatalf("no backlog after %d bytes", out.consumed())
	}
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 7, "reason": "timeout"}})
	if !mcpsession.Eventually(20*time.Second, func() bool { return strings.Contains(stderr.String(), "the client cancelled a request") }) {
		t.Fatalf("the server never logged the cancel:\n%s", stderr.String())
	}
	bound := out.consumed() + capacity
	out.mu.Lock()
	out.fast = true
	out.mu.Unlock()
	send(map[string]any{"jsonrpc": "2.0", "id": 8, "method": "ping"})
	if !mcpsession.Eventually(20*time.Second, func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return bytes.Contains(out.data, []byte(`"id":8,"result"`))
	}) {
		t.Fatal("no answer to the ping")
	}
	out.mu.Lock()
	data := append([]byte(nil), out.data...)
	out.mu.Unlock()
	var before, after int
	for off := 0; off < len(data); {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		var l rawLine
		if json.Unmarshal(data[off:off+i], &l) == nil && l.Method == "notifications/progress" && l.Params.ProgressToken == "tok-7" {
			if off > bound {
				after++
			} else {
				before++
			}
		}
		off += i + 1
	}
	t.Logf("notifications for the token: %d before the cancel was read, %d after (offset bound %d of %d bytes)", before, after, bound, len(data))
	if after > 0 {
		t.Errorf("%d progress notification(s) for the cancelled call began after the server read the cancel", after)
	}
	// The control: notifications were waiting in the server's queue when the cancel came (the
	// writer dropped them), so the old behaviour would have written them after it.
	if !strings.Contains(stderr.String(), "queued progress dropped: the client cancelled the request") {
		t.Errorf("no queued notification was dropped at the cancel: the test built no backlog and proves nothing; log:\n%s", stderr.String())
	}
}

// heartbeatAge finds the elapsed seconds a heartbeat reports.
var heartbeatAge = regexp.MustCompile(`"still working \((\d+)s\)`)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ io.Writer = (*lockedBuf)(nil)
