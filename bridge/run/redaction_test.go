package run

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/redact"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// plant fills every string the value can hold — fields of nested structs, slice elements, map keys
// and values, pointed-to values — with text around secret, and returns how many it planted.
func plant(v reflect.Value, text func() string) int {
	switch v.Kind() {
	case reflect.String:
		v.SetString(text())
		return 1
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return plant(v.Elem(), text)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		return plant(v.Index(0), text) + plant(v.Index(1), text)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		n := plant(k, text) + plant(e, text)
		v.SetMapIndex(k, e)
		return n
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += plant(v.Field(i), text)
		}
		return n
	}
	return 0
}

type found struct{ path, s string }

// strs lists every string in v with its path.
func strs(v reflect.Value, path string, out *[]found) {
	switch v.Kind() {
	case reflect.String:
		*out = append(*out, found{path, v.String()})
	case reflect.Pointer:
		if !v.IsNil() {
			strs(v.Elem(), path, out)
		}
	case reflect.Slice:
		for i := range v.Len() {
			strs(v.Index(i), path+"[]", out)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			strs(it.Key(), path+"{key}", out)
			strs(it.Value(), path+"{"+it.Key().String()+"}", out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			strs(v.Field(i), path+"."+v.Type().Field(i).Name, out)
		}
	}
}

// TestRedactResultCoversEveryField: a secret planted in every string a Result can hold — answer,
// diff, changed and touched file paths, ref names (map keys too), the worktree path, the undo
// hint, warnings, messages, tails — comes back redacted; code in every precise field comes back
// exact, and only the fields tagged diagnostic get the name-based rules. A field added to Result
// is covered without anyone listing it.
func TestRedactResultCoversEveryField(t *testing.T) {
	const secret = "plain-secret-value-0815-xyz"
	const code = "IFLA_INET6_TOKEN = C.IFLA_INET6_TOKEN; password=form.value"
	r := redact.New([]string{secret})
	var res Result
	n := plant(reflect.ValueOf(&res).Elem(), func() string { return "a/" + secret + ".txt " + code })
	if n < 20 {
		t.Fatalf("planted %d strings, the walk is broken", n)
	}
	out := redactResult(res, r)
	var got []found
	strs(reflect.ValueOf(out), "Result", &got)
	if len(got) != n {
		t.Errorf("the redacted result holds %d strings, want %d (two map keys redacted alike must both stay)", len(got), n)
	}
	diagnostic := map[string]bool{"Result.Warnings[]": true, "Result.Message": true, "Result.StderrTail": true,
		"Result.StdoutTail": true, "Result.Git.Error": true}
	for _, f := range got {
		if strings.Contains(f.s, secret) {
			t.Errorf("%s leaks the secret: %q", f.path, f.s)
		}
		if keeps := strings.Contains(f.s, code); keeps == diagnostic[f.path] {
			t.Errorf("%s = %q: precise level %v, want %v", f.path, f.s, keeps, !diagnostic[f.path])
		}
	}
	// The input is not changed, and the output shares nothing with it.
	var in []found
	strs(reflect.ValueOf(res), "Result", &in)
	for _, f := range in {
		if !strings.Contains(f.s, secret) {
			t.Errorf("redactResult changed its input at %s", f.path)
		}
	}
}

// TestLearnedCredentialsRedacted: a token the run refreshes — in the user's providers.json (a
// default host run), in a host override run's copy, in a container's copy — and then prints is
// redacted from the answer and from progress, though the server did not know it when the call
// began. A value a run may have written that is not token-like (it could hide text from the
// diff) is not learned — in a copy, nor in the user's file once the call has begun.
func TestLearnedCredentialsRedacted(t *testing.T) {
	const token = "tok-refreshed-during-the-run-4711"
	settingsWith := func(v string) []byte {
		return []byte(`{"providers":{"openai":{"settings":{"apiKey":"` + providerSecret + `","auth":{"accessToken":"` + v + `"}}}}}`)
	}
	cases := []struct {
		name     string
		iso      sandbox.Isolation
		override bool
		value    string
		learned  bool
	}{
		{name: "default host run", iso: host, value: token, learned: true},
		{name: "host override copy", iso: host, override: true, value: token, learned: true},
		{name: "container copy", iso: dock, value: token, learned: true},
		{name: "container copy, not a token", iso: dock, value: "the answer", learned: false},
		// A merge-back writes what a container chose into the user's file.
		{name: "user's file during the call, not a token", iso: host, value: "the answer", learned: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				var h *harness
				s := withText(pong(t), "PONG", "PONG "+tc.value+" PONG")
				s.before = func(context.Context) {
					path := h.set.path
					if tc.override || tc.iso == dock {
						h.set.mu.Lock()
						path = h.set.copies[len(h.set.copies)-1].SettingsPath
						h.set.mu.Unlock()
					}
					if err := os.WriteFile(path, settingsWith(tc.value), 0o600); err != nil {
						t.Error(err)
					}
				}
				h = newHarness(t, s)
				c := h.call(AskCline)
				c.Isolation = tc.iso
				if tc.override {
					c.Provider = "openai"
				}
				res := h.do(t.Context(), c)
				wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{tc.iso}})
				b, _ := json.Marshal(res)
				all := string(b) + strings.Join(h.progressed(), "\n")
				if leaked := strings.Contains(all, tc.value); leaked == tc.learned {
					t.Errorf("value %q in the result or progress: %v, want %v\ntext %q\nprogress %q", tc.value, leaked, !tc.learned, res.Text, h.progressed())
				}
				if tc.learned && !strings.Contains(res.Text, "PONG [REDACTED] PONG") {
					t.Errorf("text = %q, want the refreshed token redacted", res.Text)
				}
			})
		})
	}
}

// withText replaces a recording's answer text.
func withText(s step, from, to string) step {
	r := strings.NewReplacer(from, to)
	s.stdout, s.stderr = r.Replace(s.stdout), r.Replace(s.stderr)
	return s
}

// TestRedactResultKeepsRefsRedactedAlike: two refs whose names differ only by a secret stay two
// entries in the git evidence.
func TestRedactResultKeepsRefsRedactedAlike(t *testing.T) {
	const a, b = "plain-secret-value-0815-aaa", "plain-secret-value-0815-bbb"
	res := Result{Git: &GitReport{NewRefs: map[string]string{"refs/heads/" + a: "111", "refs/heads/" + b: "222"}}}
	got := redactResult(res, redact.New([]string{a, b})).Git.NewRefs
	if len(got) != 2 || got["refs/heads/[REDACTED]"] == "" {
		t.Errorf("NewRefs = %v, want both refs, redacted", got)
	}
	for k := range got {
		if strings.Contains(k, a) || strings.Contains(k, b) {
			t.Errorf("ref %q leaks a secret", k)
		}
	}
}
