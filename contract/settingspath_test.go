//go:build contract && linux

package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// Tokens of the Cline provider's OAuth credentials in the OAuth tests: the saved ones are
// expired, so the CLI refreshes before its first model call.
const (
	oldAccess  = "workos:old-access-token-0123456789"
	oldRefresh = "old-refresh-token-0123456789"
	newAccess  = "new-access-token-9876543210"
	newRefresh = "new-refresh-token-9876543210"
	accountID  = "acct-fake-1"
)

// oauthProviders is a providers.json whose default is the Cline provider signed in with OAuth
// (what `cline auth` leaves after a sign-in), its token expired an hour ago, talking to the fake
// provider; openai-compatible is configured too.
func oauthProviders(baseURL string) map[string]any {
	m := providersJSON(baseURL)
	m["lastUsedProvider"] = "cline"
	m["providers"].(map[string]any)["cline"] = map[string]any{
		"settings": map[string]any{
			"provider": "cline",
			"model":    "fake-model",
			"baseUrl":  baseURL,
			"auth": map[string]any{
				"accessToken":  oldAccess,
				"refreshToken": oldRefresh,
				"expiresAt":    time.Now().Add(-time.Hour).UnixMilli(),
				"accountId":    accountID,
			},
		},
		"updatedAt":   "2026-01-01T00:00:00.000Z",
		"tokenSource": "oauth",
	}
	return m
}

// TestCLIHonoursProviderSettingsPath is the ground truth the host override path rests on: with
// CLINE_PROVIDER_SETTINGS_PATH pointing at a copy, the real CLI reads its provider, model and
// OAuth credentials from the copy, refreshes an expired token and saves the new tokens into the
// copy, writes the override's model there, and leaves the user's own providers.json and its
// directory exactly as they were.
func TestCLIHonoursProviderSettingsPath(t *testing.T) {
	needSuite(t)
	t.Parallel()
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	userFile := filepath.Join(home, ".cline", "data", "settings", "providers.json")
	copyFile := filepath.Join(root, "copy", "settings", "providers.json")
	for _, d := range []string{work, filepath.Dir(userFile), filepath.Dir(copyFile), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	gitInit(t, work, map[string]string{"README.md": "hello\n"})
	prov, err := fakeprovider.Start(fakeprovider.Script(fakeprovider.Text("PONG from the copy")))
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Close()
	prov.SetRefresh(fakeprovider.ClineRefresh(newAccess, newRefresh, accountID))
	seed, _ := json.MarshalIndent(oauthProviders(prov.BaseURL()), "", "  ")
	seed = append(seed, '\n')
	for _, p := range []string{userFile, copyFile} {
		if err := os.WriteFile(p, seed, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	userDirBefore := listing(t, filepath.Dir(userFile))

	args := cline.Args(cline.Request{Prompt: "Reply with the word PONG", Cwd: work, Thinking: "none", AutoApprove: true, Model: "fake-model-2"})
	env := cline.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + filepath.Join(root, "tmp")},
		map[string]string{"CLINE_PROVIDER_SETTINGS_PATH": copyFile})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.cli, args...)
	cmd.Env, cmd.Dir = env, work
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("real CLI: %v\nstderr: %s\nstdout: %s", err, mcpsession.Tail(stderr.String(), 3000), mcpsession.Tail(stdout.String(), 3000))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		t.Logf("real CLI: peak RSS %d MiB, user %.2f s, sys %.2f s", ru.Maxrss>>10, time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds())
	}
	for _, r := range prov.Requests() {
		t.Logf("provider saw %s %s (chat #%d) auth %q", r.Method, r.Path, r.Index, r.Header.Get("Authorization"))
	}
	var refreshes []fakeprovider.Request
	for _, r := range prov.Requests() {
		if r.Path == fakeprovider.RefreshPath {
			refreshes = append(refreshes, r)
		}
	}
	if len(refreshes) != 1 {
		t.Fatalf("got %d token refresh request(s), want 1 (the saved token is expired)", len(refreshes))
	}
	if got := refreshes[0].Body["refreshToken"]; got != oldRefresh {
		t.Errorf("the refresh sent refreshToken %v, want the one saved in the copy", got)
	}
	chats := prov.Chats()
	if len(chats) != 1 {
		t.Fatalf("got %d chat request(s), want 1", len(chats))
	}
	if got := chats[0].Header.Get("Authorization"); !strings.Contains(got, newAccess) {
		t.Errorf("the model call sent Authorization %q, want the refreshed token", got)
	}
	if got := chats[0].Body["model"]; got != "fake-model-2" {
		t.Errorf("the model call used %v, want the -m override", got)
	}

	if b, err := os.ReadFile(userFile); err != nil || !bytes.Equal(b, seed) {
		t.Errorf("the user's providers.json changed (err %v):\n%s", err, b)
	}
	if after := listing(t, filepath.Dir(userFile)); strings.Join(after, ",") != strings.Join(userDirBefore, ",") {
		t.Errorf("the user's settings dir changed: before %v, after %v", userDirBefore, after)
	}
	var cp map[string]any
	b, err := os.ReadFile(copyFile)
	if err == nil {
		err = json.Unmarshal(b, &cp)
	}
	if err != nil {
		t.Fatalf("the copy after the run: %v\n%s", err, b)
	}
	cl := settingsOf(cp, "cline")
	auth, _ := cl["auth"].(map[string]any)
	if auth["refreshToken"] != newRefresh || !strings.Contains(mcpsession.Str(auth, "accessToken"), newAccess) {
		t.Errorf("the copy's cline auth after the run: %v, want the refreshed tokens", auth)
	}
	if cl["model"] != "fake-model-2" {
		t.Errorf("the copy's cline model after the run: %v, want the override", cl["model"])
	}
	t.Logf("copy dir after the run: %v", listing(t, filepath.Dir(copyFile)))
	t.Logf("copy's cline block: %v", cp["providers"].(map[string]any)["cline"])
}

// listing is the sorted names and sizes in dir.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, e.Name()+":"+fi.ModTime().UTC().Format(time.RFC3339Nano))
	}
	sort.Strings(out)
	return out
}

// TestOverrideRefreshThroughTheServer: the whole host override path with the real CLI. A call with a
// model override on the Cline provider (signed in with OAuth, its token expired) runs on a private
// copy; the CLI refreshes the token there; the server merges the new tokens into the user's file and
// nothing else: the saved model, lastUsedProvider and the other provider stay as they were, and the
// call carries no warning.
func TestOverrideRefreshThroughTheServer(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG after a refresh")), withProviders(oauthProviders))
	w.prov.SetRefresh(fakeprovider.ClineRefresh(newAccess, newRefresh, accountID))
	before := w.readJSON(w.providers)
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "model": "fake-model-2"})
	mcpsession.WantOK(t, res, sc)
	if ws, _ := sc["warnings"].([]any); len(ws) != 0 {
		t.Errorf("an honest override run with a refresh warned: %v", ws)
	}
	chats := w.chats(1)
	if got := chats[0].Header.Get("Authorization"); !strings.Contains(got, newAccess) {
		t.Errorf("the model call sent Authorization %q, want the refreshed token", got)
	}
	if got := chats[0].Body["model"]; got != "fake-model-2" {
		t.Errorf("the model call used %v, want the override", got)
	}
	after := w.readJSON(w.providers)
	cl := settingsOf(after, "cline")
	auth, _ := cl["auth"].(map[string]any)
	if auth["refreshToken"] != newRefresh || !strings.Contains(mcpsession.Str(auth, "accessToken"), newAccess) || auth["accountId"] != accountID {
		t.Errorf("cline auth in the user's file after the run: %v, want the refreshed tokens merged back", auth)
	}
	if cl["model"] != "fake-model" {
		t.Errorf("cline model %v in the user's file, want fake-model (the override stays in the copy)", cl["model"])
	}
	if after["lastUsedProvider"] != before["lastUsedProvider"] {
		t.Errorf("lastUsedProvider %v, want %v", after["lastUsedProvider"], before["lastUsedProvider"])
	}
	oc, ocBefore := settingsOf(after, "openai-compatible"), settingsOf(before, "openai-compatible")
	if fmt.Sprint(oc) != fmt.Sprint(ocBefore) {
		t.Errorf("openai-compatible changed: %v, want %v", oc, ocBefore)
	}
	if left, _ := filepath.Glob(filepath.Join(w.root, "tmp", "cline-mcp-call-*")); len(left) != 0 {
		t.Errorf("private call dirs (settings copies) left: %v", left)
	}
}
