package host

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// maxDrain bounds what cut still delivers from a pipe, so a descendant that keeps writing
// cannot keep Run from returning.
const maxDrain = 4 << 20

// streams copies a child's stdout and stderr pipes to the caller's writers, one goroutine per
// stream, so that no writer is ever called concurrently with itself.
type streams struct {
	files []*os.File
	// done is closed once both pumps returned; no write happens after that.
	done chan struct{}
}

// startStreams starts the pumps. A nil writer discards. When stdout and stderr are the same
// comparable writer, its writes are serialised, as os/exec does.
func startStreams(stdout, stderr io.Writer, outR, errR *os.File) *streams {
	if stdout != nil && stderr != nil && sameWriter(stdout, stderr) {
		w := &lockedWriter{w: stdout}
		stdout, stderr = w, w
	}
	s := &streams{files: []*os.File{outR, errR}, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go pump(&wg, stdout, outR)
	go pump(&wg, stderr, errR)
	go func() {
		wg.Wait()
		close(s.done)
	}()
	return s
}

// cut ends the pumps although the pipes have not reached EOF (a descendant still holds them).
// What is already buffered in the pipes is still delivered: the last line a child wrote
// before exiting is usually the one that matters. Where pipes have no deadlines (Windows) the
// pipes are closed instead, which cancels the pending read. cut returns when both pumps did.
func (s *streams) cut() {
	for _, f := range s.files {
		if err := f.SetReadDeadline(time.Now()); err != nil {
			_ = f.Close()
		}
	}
	<-s.done
}

// close releases the read ends; call it after done.
func (s *streams) close() { closeAll(s.files...) }

func pump(wg *sync.WaitGroup, w io.Writer, f *os.File) {
	defer wg.Done()
	if w == nil {
		w = io.Discard
	}
	write := func(p []byte) {
		if _, err := w.Write(p); err != nil {
			// Keep draining so the child never blocks on a full pipe.
			w = io.Discard
		}
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, err := f.Read(buf)
		if n > 0 {
			write(buf[:n])
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			drain(f, buf, write)
			return
		}
		if err != nil {
			return
		}
	}
}

// bufPool recycles the pumps' read buffers across runs.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 32*1024)
	return &b
}}

// sameWriter reports a == b without panicking on uncomparable dynamic types.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
