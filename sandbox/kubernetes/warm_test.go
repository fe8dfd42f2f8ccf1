package kubernetes

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func frame(stream byte, s string) []byte {
	h := make([]byte, 8, 8+len(s))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(s)))
	return append(h, s...)
}

// TestDemuxEnd: a warm pod's log ends at the end frame of the run's nonce (what follows is not
// read); an end frame with another nonce, or in a cold pod's log, is not the wrapper's stream.
func TestDemuxEnd(t *testing.T) {
	log := append(append(append(frame(1, "out\n"), frame(2, "err\n")...), frame(3, "n0nce 7")...), frame(1, "after\n")...)
	var out, errb bytes.Buffer
	code, ended, err := demuxEnd(&out, &errb, bytes.NewReader(log), "n0nce")
	if err != nil || !ended || code != 7 || out.String() != "out\n" || errb.String() != "err\n" {
		t.Errorf("got %d %v %v, stdout %q stderr %q", code, ended, err, out.String(), errb.String())
	}
	for _, c := range []struct {
		log []byte
		end string
	}{
		{frame(3, "other 0"), "n0nce"}, {frame(3, "n0nce 0"), ""}, {frame(3, "n0nce x"), "n0nce"}, {frame(3, "n0nce 300"), "n0nce"},
	} {
		if _, ended, err := demuxEnd(&out, &errb, bytes.NewReader(c.log), c.end); err == nil || ended {
			t.Errorf("%q with nonce %q: ended %v, %v", c.log, c.end, ended, err)
		}
	}
}
