package docker

import (
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// TestWithCopyLimits: limits that would refuse every archive are rejected; valid ones bound one
// copy back and, as the executor's staging budget, all copy backs in flight together.
func TestWithCopyLimits(t *testing.T) {
	zero := archive.DefaultLimits
	zero.Entries = 0
	negative := archive.DefaultLimits
	negative.Staged = -1
	for _, lim := range []archive.Limits{zero, negative, {}} {
		if _, err := New(WithClient(&fakeClient{}), WithCopyLimits(lim)); err == nil {
			t.Errorf("WithCopyLimits(%+v): got no error, want one", lim)
		}
	}
	small := archive.DefaultLimits
	small.Staged = 8 << 20
	for _, tt := range []struct {
		opts   []Option
		staged int64
	}{{nil, archive.DefaultLimits.Staged}, {[]Option{WithCopyLimits(small)}, small.Staged}} {
		e, err := New(append([]Option{WithClient(&fakeClient{})}, tt.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if e.backLimits.Staged != tt.staged || e.staging.Limit() != tt.staged {
			t.Errorf("got limits %+v, budget %d, want Staged %d for both", e.backLimits, e.staging.Limit(), tt.staged)
		}
	}
}
