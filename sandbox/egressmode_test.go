package sandbox

import "testing"

func TestResolveEgressMode(t *testing.T) {
	for _, tc := range []struct {
		mode, network string
		allow         bool
		want          EgressMode // "" = an error
	}{
		{"", "bridge", false, EgressProvider},
		{"", "mynet", true, EgressProvider},
		{"", "none", false, EgressNone},
		{"", "container:relay", false, ""},
		{"", "host", false, ""},
		{"open", "container:relay", false, EgressOpen},
		{"open", "host", false, EgressOpen},
		{"open", "bridge", false, EgressOpen},
		{"none", "bridge", false, EgressNone},
		{"none", "none", false, EgressNone},
		{"none", "mynet", false, ""},
		{"provider", "none", false, ""},
		{"provider", "container:relay", false, ""},
		{"open", "bridge", true, ""},
		{"none", "none", true, ""},
		{"wide", "bridge", false, ""},
	} {
		got, err := ResolveEgressMode(tc.mode, tc.network, tc.allow)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("ResolveEgressMode(%q, %q, %v): got %q, %v, want %q", tc.mode, tc.network, tc.allow, got, err, tc.want)
		}
	}
}
