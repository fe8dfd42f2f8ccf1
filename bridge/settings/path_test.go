package settings

import (
	"path/filepath"
	"testing"
)

func TestPath(t *testing.T) {
	home := filepath.FromSlash("/home/u")
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"home only (a_text_pong_home_only)", nil, "/home/u/.cline/data/settings/providers.json"},
		{"CLINE_DIR", map[string]string{"CLINE_DIR": "/c"}, "/c/data/settings/providers.json"},
		{"CLINE_DATA_DIR beats CLINE_DIR (a_text_pong_env_datadir)",
			map[string]string{"CLINE_DIR": "/c", "CLINE_DATA_DIR": "/d"}, "/d/settings/providers.json"},
		{"CLINE_PROVIDER_SETTINGS_PATH beats all (a_text_pong_providers_path_env)",
			map[string]string{"CLINE_DIR": "/c", "CLINE_DATA_DIR": "/d", "CLINE_PROVIDER_SETTINGS_PATH": "/x/prov.json"},
			"/x/prov.json"},
		{"empty values count as unset",
			map[string]string{"CLINE_DIR": "", "CLINE_DATA_DIR": "", "CLINE_PROVIDER_SETTINGS_PATH": ""},
			"/home/u/.cline/data/settings/providers.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Path(func(k string) string { return tt.env[k] }, home)
			if want := filepath.FromSlash(tt.want); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}
