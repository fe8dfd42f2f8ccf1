package kubernetes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
)

// sidecarLine is an attach to a pod's egress sidecar (its stdin and stdout, pods/attach): the
// grant goes over it and, while it is kept, each settle of a kept pod's grant too — a line each
// way, the credential on the sidecar's stdin as always — instead of an exec of sidecar-settle
// apiece (an exec costs about 150 ms of a small node's time). The sidecar's stdin is once only:
// a line that broke stays broken, and the settles go by exec.
type sidecarLine struct {
	mu     sync.Mutex
	in     *io.PipeWriter
	out    *bufio.Reader
	stop   context.CancelFunc
	done   chan struct{}
	broken bool
}

// errLineBroken is a sidecarLine's answer once it broke or was closed.
var errLineBroken = errors.New("the attach to the egress sidecar has ended")

// attachSidecar opens the attach to pod's sidecar, for as long as the line is not closed.
func (e *Executor) attachSidecar(ctx context.Context, pod string) *sidecarLine {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	actx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &sidecarLine{in: inW, out: bufio.NewReader(outR), stop: stop, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		opts := &corev1.PodAttachOptions{Container: sidecarName, Stdin: true, Stdout: true}
		err := e.stream(actx, pod, "attach", opts, remotecommand.StreamOptions{Stdin: inR, Stdout: outW})
		outW.CloseWithError(fmt.Errorf("the attach ended: %v", err))
		inR.CloseWithError(errLineBroken)
	}()
	return l
}

// ask writes one line to the sidecar and reads its one-line answer, within limit; a line that
// fails is broken for good (the sidecar may or may not have acted on it).
func (l *sidecarLine) ask(line []byte, limit time.Duration) ([]byte, error) {
	if l == nil {
		return nil, errLineBroken
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken {
		return nil, errLineBroken
	}
	t := time.AfterFunc(limit, l.stop) // ends the attach: the read below returns
	defer t.Stop()
	_, err := l.in.Write(append(line, '\n'))
	var text []byte
	if err == nil {
		text, err = l.out.ReadBytes('\n')
	}
	if err != nil {
		l.broken = true
		l.stop()
		return nil, err
	}
	return text, nil
}

// usable reports whether the line can still carry a settle.
func (l *sidecarLine) usable() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.broken
}

// close ends the attach and waits for it; the sidecar keeps its grant (its stdin is closed).
func (l *sidecarLine) close() {
	if l == nil {
		return
	}
	l.stop()
	_ = l.in.Close()
	<-l.done
	l.mu.Lock()
	l.broken = true
	l.mu.Unlock()
}
