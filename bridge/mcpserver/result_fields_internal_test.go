package mcpserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// plantMarkers sets every string a value can hold (nested structs, slices, map keys and values,
// pointers) to a distinct marker «n», and every bool to b.
func plantMarkers(v reflect.Value, n *int, b bool) {
	switch v.Kind() {
	case reflect.String:
		*n++
		v.SetString(fmt.Sprintf("«%d»", *n))
	case reflect.Bool:
		v.SetBool(b)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		plantMarkers(v.Elem(), n, b)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		plantMarkers(v.Index(0), n, b)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		plantMarkers(k, n, b)
		plantMarkers(e, n, b)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			plantMarkers(v.Field(i), n, b)
		}
	}
}

var marker = regexp.MustCompile(`«\d+»`)

// TestResultStringsComeFromTheResult: every string in structuredContent, and every piece of the
// text content that is not the fixed layout, is a string of run.Result — which Runner.Do redacts
// field by field (run's TestRedactResultCoversEveryField) — so nothing reaches the client around
// the redaction. Each string field of Result holds a distinct marker; for every tool, success and
// failure, no string in structuredContent may be anything else but a marker, and the text with
// its markers taken out must be the layout alone (no letters from elsewhere).
func TestResultStringsComeFromTheResult(t *testing.T) {
	for _, tool := range []run.Tool{run.AskCline, run.ApplyClineEdits, run.AskClineWorkspace, run.ReviewCline} {
		for _, ok := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s ok=%v", tool, ok), func(t *testing.T) {
				var r run.Result
				n := 0
				// Removed and Pooled false: the text names the worktree left behind.
				plantMarkers(reflect.ValueOf(&r).Elem(), &n, false)
				r.OK = ok
				res := toolResult(tool, r)
				b, err := json.Marshal(res.StructuredContent)
				if err != nil {
					t.Fatal(err)
				}
				var sc any
				if err := json.Unmarshal(b, &sc); err != nil {
					t.Fatal(err)
				}
				var walk func(path string, v any)
				walk = func(path string, v any) {
					switch x := v.(type) {
					case string:
						if !marker.MatchString(x) || marker.ReplaceAllString(x, "") != "" {
							t.Errorf("structuredContent %s = %q: not a string of the result", path, x)
						}
					case map[string]any:
						for k, e := range x {
							walk(path+"."+k, e)
						}
					case []any:
						for _, e := range x {
							walk(path+"[]", e)
						}
					}
				}
				walk("", sc)
				text := ""
				for _, c := range res.Content {
					b, _ := json.Marshal(c)
					var tc struct{ Text string }
					_ = json.Unmarshal(b, &tc)
					text += tc.Text
				}
				if ok || tool != run.ApplyClineEdits {
					rest := marker.ReplaceAllString(text, "")
					for _, layout := range []string{"Changed files:", "Diff:", "[diff truncated]", "Warnings:",
						"Note: the worktree", "could not be removed.", "No files changed.", "Kind:", "Message:",
						"Exit code:", "signal", "Attempts:", "Stderr tail:", "Stdout tail:", "->", "Enforced:"} {
						rest = strings.ReplaceAll(rest, layout, "")
					}
					if strings.IndexFunc(rest, func(c rune) bool { return c >= 'A' && c <= 'z' }) >= 0 {
						t.Errorf("the text holds words that are not the result's strings nor the layout: %q\nfull text:\n%s", rest, text)
					}
				}
			})
		}
	}
}
