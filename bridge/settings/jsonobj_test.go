package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEncodeRoundTripsRecordings: every providers.json the real CLI wrote re-encodes byte for byte, so a restore
// that changes nothing semantic changes nothing on disk either.
func TestEncodeRoundTripsRecordings(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			o, err := parseObject(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(o.encode()); got != string(data) {
				t.Errorf("got\n%s\nwant\n%s", got, data)
			}
		})
	}
}

func TestParseKeepsOrderUnknownFieldsAndEscapes(t *testing.T) {
	in := `{"z":1,"a":{"y":[1,"<&>",{"q":null}],"x":true},"e":{},"arr":[],"s":"tab\tquote\"nl\nctl\u0001 é \u2028","z":2.50}`
	o, err := parseObject([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "z": 2.50,
  "a": {
    "y": [
      1,
      "<&>",
      {
        "q": null
      }
    ],
    "x": true
  },
  "e": {},
  "arr": [],
  "s": "tab\tquote\"nl\nctl\u0001 é ` + "\u2028" + `"
}
`
	if got := string(o.encode()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{``, `{`, `[1]`, `"s"`, `{"a":1} x`, `{"a":1}{}`, `{"apiKey":"sk-secret"`} {
		t.Run(in, func(t *testing.T) {
			_, err := parseObject([]byte(in))
			if err == nil {
				t.Fatal("got nil, want an error")
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("error %q leaks file content", err)
			}
		})
	}
}

func TestSetLikePutsKeyBack(t *testing.T) {
	o, _ := parseObject([]byte(`{"version":1,"modes":{},"providers":{}}`))
	o.setLike("lastUsedProvider", "x", []string{"version", "lastUsedProvider", "modes", "providers"})
	if got, want := strings.Join(o.keys, ","), "version,lastUsedProvider,modes,providers"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	o.setLike("new", 1, nil)
	if got, want := o.keys[len(o.keys)-1], "new"; got != want {
		t.Errorf("got %s last, want %s", got, want)
	}
	o.setLike("first", 1, []string{"first", "version"})
	if got, want := o.keys[0], "first"; got != want {
		t.Errorf("got %s first, want %s", got, want)
	}
}
