package service

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

func writeTokenFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseTokensRejects(t *testing.T) {
	h := Hash("x")
	for name, body := range map[string]string{
		"empty":          `{"tenants": []}`,
		"plain token":    `{"tenants": [{"name": "a", "tokenSha256": ["secret"], "maxConcurrent": 1}]}`,
		"upper hex":      `{"tenants": [{"name": "a", "tokenSha256": ["` + strings.ToUpper(h) + `"], "maxConcurrent": 1}]}`,
		"no concurrency": `{"tenants": [{"name": "a", "tokenSha256": ["` + h + `"]}]}`,
		"bad name":       `{"tenants": [{"name": "A b", "tokenSha256": ["` + h + `"], "maxConcurrent": 1}]}`,
		"unknown field":  `{"tenants": [{"name": "a", "token": "x", "tokenSha256": ["` + h + `"], "maxConcurrent": 1}]}`,
		"shared hash":    `{"tenants": [{"name": "a", "tokenSha256": ["` + h + `"], "maxConcurrent": 1}, {"name": "b", "tokenSha256": ["` + h + `"], "maxConcurrent": 1}]}`,
		"twice named":    `{"tenants": [{"name": "a", "tokenSha256": ["` + h + `"], "maxConcurrent": 1}, {"name": "a", "tokenSha256": ["` + Hash("y") + `"], "maxConcurrent": 1}]}`,
		"negative spend": `{"tenants": [{"name": "a", "tokenSha256": ["` + h + `"], "maxConcurrent": 1, "maxSpendUsdPerDay": -1}]}`,
		"trailing":       `{"tenants": [{"name": "a", "tokenSha256": ["` + h + `"], "maxConcurrent": 1}]} {}`,
	} {
		if _, err := parseTokens([]byte(body)); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

// TestTokensReload: a changed file is re-read at the next lookup; a broken one is logged once and
// the last good one stays in force; the token never reaches the log.
func TestTokensReload(t *testing.T) {
	p := writeTokenFile(t, `{"tenants": [{"name": "a", "tokenSha256": ["`+Hash("one")+`"], "maxConcurrent": 1}]}`)
	var logBuf bytes.Buffer
	toks, err := LoadTokens(p, slog.New(slog.NewTextHandler(&logBuf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if ten, ok := toks.Lookup("one"); !ok || ten.Name != "a" {
		t.Fatalf("lookup: got %v %v", ten, ok)
	}
	if _, ok := toks.Lookup(""); ok {
		t.Error("the empty token was accepted")
	}
	next := p + ".new"
	_ = os.WriteFile(next, []byte(`{"tenants": [{"name": "a", "tokenSha256": ["`+Hash("two")+`"], "maxConcurrent": 3}]}`), 0o600)
	if err := os.Rename(next, p); err != nil {
		t.Fatal(err)
	}
	if _, ok := toks.Lookup("one"); ok {
		t.Error("the old token still works after the file changed")
	}
	if ten, ok := toks.Lookup("two"); !ok || ten.Limits.MaxConcurrent != 3 {
		t.Errorf("new token: got %v %v, want tenant a with maxConcurrent 3", ten, ok)
	}
	_ = os.WriteFile(p, []byte(`{"tenants": [`), 0o600)
	for range 3 {
		if _, ok := toks.Lookup("two"); !ok {
			t.Error("a broken file replaced the good one")
		}
	}
	if n := strings.Count(logBuf.String(), "cannot be used"); n != 1 {
		t.Errorf("the broken file was logged %d times, want 1:\n%s", n, logBuf.String())
	}
	if strings.Contains(logBuf.String(), "two") && strings.Contains(logBuf.String(), `"two"`) {
		t.Errorf("the log shows a token:\n%s", logBuf.String())
	}
}

func TestAuth(t *testing.T) {
	p := writeTokenFile(t, `{"tenants": [{"name": "a", "tokenSha256": ["`+Hash("good")+`"], "maxConcurrent": 1}]}`)
	toks, err := LoadTokens(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	h := Auth(toks, Tenant{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, Owner(r.Context())+"|"+r.Header.Get("Authorization"))
	}))
	for hdr, want := range map[string]int{"": 401, "Bearer bad": 401, "Bearer ": 401, "Token good": 401, "bearer good": 200, "Bearer good": 200} {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("%q: got %d, want %d", hdr, rec.Code, want)
		}
		if strings.Contains(rec.Body.String(), "good") || strings.Contains(rec.Body.String(), "bad") {
			t.Errorf("%q: the answer echoes the token: %s", hdr, rec.Body.String())
		}
	}
	if len(seen) != 2 || seen[0] != "a|" || seen[1] != "a|" {
		t.Errorf("requests let through: got %q, want two of tenant a without the Authorization header", seen)
	}
}

// TestAdmissionQueue: a call past maxQueued is refused at once, a waiter whose context ends leaves
// no trace, background runs queue past maxQueued, and a released slot goes to the first waiter.
func TestAdmissionQueue(t *testing.T) {
	a := &Admission{}
	ten := Tenant{Name: "t", Limits: Limits{MaxConcurrent: 1, MaxQueued: 1}}
	rel1, r := a.Acquire(t.Context(), ten, false)
	if r != nil {
		t.Fatal(r)
	}
	ctx, cancel := context.WithCancel(t.Context())
	gone := make(chan *Refusal)
	go func() { _, r := a.Acquire(ctx, ten, false); gone <- r }()
	waitQueued(t, a, 1)
	if _, r := a.Acquire(t.Context(), ten, false); r == nil || r.Kind != KindRateLimited || !r.Retryable || r.RetryAfter < time.Second {
		t.Errorf("past maxQueued: got %+v, want rate_limited with a retry hint", r)
	}
	cancel()
	if r := <-gone; r == nil || r.Kind != "cancelled" {
		t.Errorf("cancelled waiter: got %+v", r)
	}
	waitQueued(t, a, 0)
	bg := make(chan func(time.Duration, float64), 2)
	for range 2 { // background: not bounded by maxQueued
		go func() { rel, _ := a.Acquire(context.WithoutCancel(t.Context()), ten, true); bg <- rel }()
	}
	for a.waiting("t") != 2 {
		time.Sleep(time.Millisecond)
	}
	rel1(time.Second, 0)
	rel2 := <-bg
	if s := a.Snapshot("t"); s.Running != 1 {
		t.Errorf("after handover: %+v, want 1 running", s)
	}
	rel2(time.Second, 0)
	(<-bg)(time.Second, 0)
	if s := a.Snapshot("t"); s.Running != 0 || s.Queued != 0 {
		t.Errorf("at the end: %+v, want nothing running or queued", s)
	}
}

func (a *Admission) waiting(name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usageLocked(name).waiting.Len()
}

func waitQueued(t *testing.T, a *Admission, n int) {
	t.Helper()
	for a.Snapshot("t").Queued != n {
		time.Sleep(time.Millisecond)
	}
}

// TestAdmissionSpendDay: spend resets with the UTC day; past the limit a refusal names midnight.
func TestAdmissionSpendDay(t *testing.T) {
	now := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	a := &Admission{Now: func() time.Time { return now }}
	ten := Tenant{Name: "t", Limits: Limits{MaxConcurrent: 2, MaxSpendUSDPerDay: 1}}
	rel, _ := a.Acquire(t.Context(), ten, false)
	rel(time.Second, 1.5)
	_, r := a.Acquire(t.Context(), ten, false)
	if r == nil || r.Kind != KindBudgetExceeded || r.Retryable || r.RetryAfter != time.Hour {
		t.Errorf("past the limit: got %+v, want budget_exceeded until midnight (1 h)", r)
	}
	if _, r := a.StartJob(ten); r == nil || r.Kind != KindBudgetExceeded {
		t.Errorf("a job past the limit: got %+v", r)
	}
	now = now.Add(2 * time.Hour)
	if rel, r := a.Acquire(t.Context(), ten, false); r != nil {
		t.Errorf("the next UTC day: got %+v, want admitted", r)
	} else {
		rel(0, 0)
	}
}

// TestRunnerRefuses: no tenant, host isolation, a cwd outside the root (through a symlink too)
// and another tenant's session never reach the inner runner.
func TestRunnerRefuses(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	link := filepath.Join(root, "escape")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	inner := &countInner{}
	r := &Runner{Inner: inner, Admission: &Admission{}}
	a := Tenant{Name: "a", Root: root, Limits: Limits{MaxConcurrent: 1}}
	b := Tenant{Name: "b", Limits: Limits{MaxConcurrent: 1}}
	ctxA, ctxB := WithTenant(t.Context(), a), WithTenant(t.Context(), b)
	for name, tc := range map[string]struct {
		ctx  context.Context
		call run.Call
	}{
		"no tenant":    {t.Context(), run.Call{Cwd: root}},
		"host":         {ctxA, run.Call{Cwd: root, Isolation: "host"}},
		"outside":      {ctxA, run.Call{Cwd: other}},
		"through link": {ctxA, run.Call{Cwd: link}},
		"no cwd":       {ctxA, run.Call{}},
	} {
		if res := r.Do(tc.ctx, tc.call, nil); res.OK || res.Kind != "launch_failed" {
			t.Errorf("%s: got %+v, want launch_failed", name, res)
		}
	}
	if res := r.Do(ctxA, run.Call{Cwd: root}, nil); !res.OK {
		t.Fatalf("inside the root: %+v", res)
	}
	if res := r.Do(ctxB, run.Call{SessionID: "s-1"}, nil); res.OK {
		t.Errorf("another tenant's session: got %+v, want refused", res)
	}
	if res := r.Do(ctxA, run.Call{Cwd: root, SessionID: "s-1"}, nil); !res.OK {
		t.Errorf("own session: got %+v", res)
	}
	if inner.n != 2 {
		t.Errorf("inner ran %d calls, want 2", inner.n)
	}
}

type countInner struct{ n int }

func (c *countInner) Do(_ context.Context, _ run.Call, _ run.Progress) run.Result {
	c.n++
	return run.Result{OK: true, SessionID: "s-1"}
}

// TestTokensSecretSwap: a Kubernetes Secret volume updates by pointing its ..data link at a new
// directory; the token file (a link through ..data) is re-read, with the same size and even the
// same modification time.
func TestTokensSecretSwap(t *testing.T) {
	dir := t.TempDir()
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, tok := range map[string]string{"v1": "first", "v2": "other"} { // tokens of one length: files of one size
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name, "tokens.json")
		if err := os.WriteFile(f, []byte(`{"tenants": [{"name": "a", "tokenSha256": ["`+Hash(tok)+`"], "maxConcurrent": 1}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokens.json")
	if err := os.Symlink(filepath.Join("..data", "tokens.json"), path); err != nil {
		t.Fatal(err)
	}
	toks, err := LoadTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := toks.Lookup("first"); !ok {
		t.Fatal("the first token does not work")
	}
	if err := os.Symlink("v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if _, ok := toks.Lookup("first"); ok {
		t.Error("the first token still works after the Secret changed")
	}
	if _, ok := toks.Lookup("other"); !ok {
		t.Error("the new token does not work after the Secret changed")
	}
}

// TestAdmissionSpendWhileQueued: a call that waited while the run ahead spent the rest of the day
// is refused when its turn comes, and its slot passes on.
func TestAdmissionSpendWhileQueued(t *testing.T) {
	a := &Admission{}
	ten := Tenant{Name: "t", Limits: Limits{MaxConcurrent: 1, MaxQueued: 1, MaxSpendUSDPerDay: 1}}
	rel, _ := a.Acquire(t.Context(), ten, false)
	got := make(chan *Refusal)
	go func() { _, r := a.Acquire(t.Context(), ten, false); got <- r }()
	waitQueued(t, a, 1)
	rel(time.Second, 2)
	if r := <-got; r == nil || r.Kind != KindBudgetExceeded {
		t.Errorf("the waiter after the day's spend: got %+v, want budget_exceeded", r)
	}
	if s := a.Snapshot("t"); s.Running != 0 || s.Queued != 0 {
		t.Errorf("after the refusal: %+v, want the slot free", s)
	}
}

// TestAdmissionSpendSurvivesRestart: a new Admission over the same spend file goes on counting the
// day; on the next UTC day it starts at zero.
func TestAdmissionSpendSurvivesRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state", "spend.json")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ten := Tenant{Name: "t", Limits: Limits{MaxConcurrent: 1, MaxSpendUSDPerDay: 1}}
	a := &Admission{Now: clock, SpendFile: file}
	rel, _ := a.Acquire(t.Context(), ten, false)
	rel(time.Second, 1.25)
	b := &Admission{Now: clock, SpendFile: file}
	if _, r := b.Acquire(t.Context(), ten, false); r == nil || r.Kind != KindBudgetExceeded {
		t.Errorf("after a restart: got %+v, want budget_exceeded", r)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("spend file: %v %v, want mode 0600", fi, err)
	}
	now = now.Add(24 * time.Hour)
	c := &Admission{Now: clock, SpendFile: file}
	if s := c.Snapshot("t"); s.Spent != 0 {
		t.Errorf("the next day after a restart: spent %v, want 0", s.Spent)
	}
}
