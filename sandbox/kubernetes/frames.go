package kubernetes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxFrame bounds one frame of the wrapper's stream (it writes what one write of the CLI held).
const maxFrame = 16 << 20

// demux splits the main container's log — the helper wrapper's frames, {stream, 0, 0, 0, size
// (big endian uint32)} then size bytes, Docker's multiplexed format — into stdout (stream 1) and
// stderr (stream 2). It returns nil at a clean end of the stream.
func demux(stdout, stderr io.Writer, r io.Reader) error {
	var h [8]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := int64(binary.BigEndian.Uint32(h[4:]))
		if n > maxFrame {
			return fmt.Errorf("a frame of %d bytes: the log is not the wrapper's stream", n)
		}
		w := stdout
		switch h[0] {
		case 1:
		case 2:
			w = stderr
		default:
			return fmt.Errorf("a frame of stream %d: the log is not the wrapper's stream", h[0])
		}
		if _, err := io.CopyBuffer(w, io.LimitReader(r, n), buf); err != nil {
			return err
		}
	}
}
