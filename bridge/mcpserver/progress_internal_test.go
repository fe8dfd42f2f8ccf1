package mcpserver

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

type noteRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *noteRecorder) progress(_ mcp.ProgressToken, _ int, msg string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msg)
	return true
}

// TestHeartbeatRepeatsTheLastMessageOnce: during a silent stretch every heartbeat says how long
// the call has run and repeats the run's last message, once: heartbeats do not quote each other
// (they did, so a long silent call's message grew by one "still working" per heartbeat).
func TestHeartbeatRepeatsTheLastMessageOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		rec := &noteRecorder{}
		p := newProgress(ctx, rec, "tok", 500*time.Millisecond, time.Second)
		time.Sleep(1200 * time.Millisecond)
		p.Report("reading main.go")
		time.Sleep(10 * time.Second)
		p.Close()
		cancel()
		synctest.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		beats := 0
		for _, m := range rec.msgs {
			if !strings.HasPrefix(m, "still working") {
				continue
			}
			beats++
			if n := strings.Count(m, "still working"); n != 1 {
				t.Errorf("heartbeat %q says \"still working\" %d times", m, n)
			}
			if !strings.HasPrefix(m, "still working (0s)") && !strings.HasPrefix(m, "still working (1s)") && !strings.HasSuffix(m, ": reading main.go") {
				t.Errorf("heartbeat %q does not repeat the run's last message", m)
			}
		}
		if beats < 5 {
			t.Errorf("got %d heartbeats in 10 s with a 1 s heartbeat: %q", beats, rec.msgs)
		}
	})
}
