package kubernetes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxFrame bounds one frame of the wrapper's stream (it writes what one write of the CLI held).
const maxFrame = 16 << 20

// demux splits the main container's log — the helper wrapper's frames, {stream, 0, 0, 0, size
// (big endian uint32)} then size bytes, Docker's multiplexed format — into stdout (stream 1) and
// stderr (stream 2). It returns nil at a clean end of the stream.
func demux(stdout, stderr io.Writer, r io.Reader) error {
	_, _, err := demuxEnd(stdout, stderr, r, "")
	return err
}

// demuxEnd is demux that also ends at a warm pod's end frame (stream 3, "END code", END the
// run's nonce: cline-mcp-k8s-helper warm), returning the code it holds and ended.
func demuxEnd(stdout, stderr io.Writer, r io.Reader, end string) (code int, ended bool, err error) {
	var h [8]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, false, nil
			}
			return 0, false, err
		}
		n := int64(binary.BigEndian.Uint32(h[4:]))
		if n > maxFrame {
			return 0, false, fmt.Errorf("a frame of %d bytes: the log is not the wrapper's stream", n)
		}
		w := stdout
		switch {
		case h[0] == 1:
		case h[0] == 2:
			w = stderr
		case h[0] == 3 && end != "" && n <= 64:
			b := make([]byte, n)
			if _, err := io.ReadFull(r, b); err != nil {
				return 0, false, err
			}
			rest, ok := strings.CutPrefix(string(b), end+" ")
			c, cerr := strconv.Atoi(rest)
			if !ok || cerr != nil || c < 0 || c > 255 {
				return 0, false, fmt.Errorf("an end frame not the wrapper's: %q", b)
			}
			return c, true, nil
		default:
			return 0, false, fmt.Errorf("a frame of stream %d: the log is not the wrapper's stream", h[0])
		}
		if _, err := io.CopyBuffer(w, io.LimitReader(r, n), buf); err != nil {
			return 0, false, err
		}
	}
}
