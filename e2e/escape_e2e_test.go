//go:build e2e && unix

package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// Escape tests through the real engine with the fake image: each attack scenario writes
// its marker first and reports every step, so a test fails when the attack never ran; then the
// host must show no trace of it beyond the run's own files.

func TestDockerEscapeNestedRepoFilterInApply(t *testing.T) {
	e := newDockerEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hi\n", "sub/keep.txt": "keep\n"})
	marker, cmd := hostMarker(t, e)
	sub := filepath.Join(e.work, "sub")
	sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Plant fake:attack_nested_repo?" + cmd, "cwd": sub})
	wantDockerOK(t, sc)
	nestedRepoContained(t, sc, sub, marker)
}

func TestDockerEscapeAttributesDrivers(t *testing.T) {
	e := newDockerEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hi\n"})
	marker, cmd := hostMarker(t, e)
	sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Textconv fake:attack_attributes?" + cmd})
	wantDockerOK(t, sc)
	rep := report(t, sc)
	if rep["gitattributes"] != "ok" || rep["edit"] != "ok" {
		t.Fatalf("the attack could not write the checkout: %v", rep)
	}
	if rep["git_config"] == "ok" || !strings.Contains(fmt.Sprint(rep["git_config"]), "read-only") {
		t.Errorf("the container wrote .git/config: %v", rep["git_config"])
	}
	if exists(marker) {
		t.Fatalf("the host's git ran a program the container configured")
	}
	files := mcpsession.ChangedFiles(sc)
	if files["README.md"] != "M" || files[".gitattributes"] != "A" || files["hostile.sh"] != "A" {
		t.Errorf("changedFiles %v, want README.md M, .gitattributes and hostile.sh A", files)
	}
	if d := mcpsession.Str(sc, "diff"); !strings.Contains(d, "+edited for the textconv attack") {
		t.Errorf("diff lacks the edit as it is on disk:\n%s", d)
	}
}

// userWorktree adds the user's own second linked worktree (named to sort after ours, which makes
// `git worktree prune` drop the user's entry when both name the same directory) with an
// uncommitted file and a staged change.
func userWorktree(t *testing.T, repo string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "yours")
	gitOut(t, repo, "worktree", "add", "-q", "-b", "yours", dir)
	writeFile(t, filepath.Join(dir, "draft.txt"), "unsaved work\n")
	writeFile(t, filepath.Join(dir, "README.md"), "staged change\n")
	gitOut(t, dir, "add", "README.md")
	return dir
}

func TestDockerEscapeWorkspaceRedirectsAtUsersWorktree(t *testing.T) {
	e := newDockerEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "committed\n"})
	marker, cmd := hostMarker(t, e)
	yours := userWorktree(t, e.work)
	admin := filepath.Join(e.work, ".git", "worktrees", "yours")
	for _, attack := range []string{
		"gitfile=" + url.QueryEscape(admin) + "&gitdir=" + url.QueryEscape(filepath.Join(yours, ".git")),
		"gitfile=plant&commondir=plant&" + cmd,
	} {
		sc, _ := dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": "Redirect fake:attack_redirect?" + attack})
		wantDockerOK(t, sc)
		rep := report(t, sc)
		for _, step := range []string{"gitfile", "gitdir", "commondir"} {
			if v, ok := rep[step]; ok && !strings.Contains(fmt.Sprint(v), "read-only") {
				t.Errorf("the container rewrote the worktree's %s pointer: %v", step, v)
			}
		}
		wt, _ := sc["worktree"].(map[string]any)
		if wt["removed"] != true || !strings.Contains(fmt.Sprint(wt["touched"]), "fake-cline-attack-attack_redirect.txt") {
			t.Errorf("worktree report %v: want removed, with the attack's marker among the touched files", wt)
		}
	}
	if exists(marker) {
		t.Fatalf("the host's git ran a program the container planted")
	}
	if got := gitOut(t, yours, "diff", "--cached", "--name-only"); got != "README.md" {
		t.Errorf("the user's staged change: got %q", got)
	}
	if mcpsession.ReadFile(t, filepath.Join(yours, "draft.txt")) != "unsaved work\n" {
		t.Errorf("the user's uncommitted file changed")
	}
	if wts := worktreeList(t, e.work); len(wts) != 2 || !slices.Contains(wts, yours) {
		t.Errorf("worktrees: got %v, want main and the user's %s", wts, yours)
	}
}

// oauthProviders is the recordings' default provider signed in with OAuth, plus a second provider
// with a key of its own that a container must never see.
const oauthProviders = `{
  "version": 1,
  "lastUsedProvider": "openai-compatible",
  "modes": {},
  "providers": {
    "openai-compatible": {
      "settings": {
        "provider": "openai-compatible",
        "model": "fake-model",
        "baseUrl": "http://127.0.0.1:18080/v1",
        "auth": {"accessToken": "tok-old", "refreshToken": "rt-old", "expiresAt": 1767225600000, "accountId": "acct-1"}
      },
      "updatedAt": "2026-01-01T00:00:00.000Z",
      "tokenSource": "oauth"
    },
    "anthropic": {
      "settings": {"provider": "anthropic", "apiKey": "sk-other-provider-key", "model": "claude"},
      "updatedAt": "2026-01-01T00:00:00.000Z",
      "tokenSource": "manual"
    }
  }
}
`

func TestDockerEscapeSettingsRewrites(t *testing.T) {
	e := newDockerEnv(t)
	e.writeProviders(oauthProviders)
	gitInit(t, e.work, map[string]string{"README.md": "hi\n"}) // a writable checkout for the attack's marker
	const evil = "attacker-7e1b.invalid"
	sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Rewrite fake:attack_settings?token=tok-refreshed&base_url=https%3A%2F%2F" + evil + "%2Fv1&api_key=sk-" + evil})
	wantDockerOK(t, sc)
	rep := report(t, sc)
	if rep["settings"] != "ok" {
		t.Fatalf("the attack could not rewrite its copy: %v", rep)
	}
	if got := fmt.Sprint(rep["providers_seen"]); got != "[openai-compatible]" {
		t.Errorf("the container's copy held providers %s, want only the one the run uses", got)
	}
	raw := mcpsession.ReadFile(t, e.providers)
	if strings.Contains(raw, evil) || strings.Contains(raw, `"evil"`) || strings.Contains(raw, "X-Exfiltrate") {
		t.Fatalf("the rewrite reached the host's providers.json:\n%s", raw)
	}
	p := e.readProviders()
	// Nothing about credentials comes back from a container: not even its "refresh".
	if got := mcpsession.Dig(p, "providers", "openai-compatible", "settings", "auth", "accessToken"); got != "tok-old" {
		t.Errorf("the container's token reached the host: %v, want tok-old kept", got)
	}
	if p["lastUsedProvider"] != "openai-compatible" || mcpsession.Dig(p, "providers", "openai-compatible", "settings", "baseUrl") != "http://127.0.0.1:18080/v1" ||
		mcpsession.Dig(p, "providers", "anthropic", "settings", "apiKey") != "sk-other-provider-key" {
		t.Errorf("settings changed beyond the token: %s", raw)
	}
	warns := fmt.Sprint(sc["warnings"])
	for _, field := range []string{"lastUsedProvider", "settings.baseUrl", "settings.apiKey", "settings.headers", "providers.evil", "settings.auth.accessToken"} {
		if !strings.Contains(warns, field) {
			t.Errorf("warnings %s do not name %s", warns, field)
		}
	}
	if strings.Contains(warns, evil) {
		t.Errorf("a warning carries a value the run wrote: %s", warns)
	}
}

func TestDockerEscapeSettingsFileReplaced(t *testing.T) {
	e := newDockerEnv(t)
	e.writeProviders(oauthProviders)
	gitInit(t, e.work, map[string]string{"README.md": "hi\n"}) // a writable checkout for the attack's marker
	const markerToken = "HOST-FILE-MARKER-5d2e"
	// A host file shaped like a settings file that would refresh the token to the marker.
	hostFile := filepath.Join(e.root, "elsewhere", "providers.json")
	if err := os.MkdirAll(filepath.Dir(hostFile), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, hostFile, strings.Replace(oauthProviders, "tok-old", markerToken, 1))
	before := mcpsession.ReadFile(t, e.providers)
	for kind, want := range map[string]string{"symlink": "a symlink", "dirlink": "settings dir was replaced", "fifo": "a FIFO", "huge": "over the", "invalid": "unusable settings copy"} {
		sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Replace fake:attack_settings_file?kind=" + kind + "&target=" + url.QueryEscape(hostFile) + "&marker=" + kind + ".txt"})
		wantDockerOK(t, sc)
		if rep := report(t, sc); rep[kind] != "ok" {
			t.Fatalf("%s: the attack failed in the container: %v", kind, rep)
		}
		if got := mcpsession.ReadFile(t, e.providers); got != before {
			t.Errorf("%s: the host's providers.json changed:\n%s", kind, got)
		}
		if w := fmt.Sprint(sc["warnings"]); !strings.Contains(w, want) {
			t.Errorf("%s: warnings %s, want one saying %q", kind, w, want)
		}
	}
	if strings.Contains(mcpsession.ReadFile(t, e.providers), markerToken) {
		t.Fatalf("the host file's content reached providers.json")
	}
}

func TestDockerEscapeSymlinkToHostFile(t *testing.T) {
	e := newDockerEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hi\n"})
	const secret = "HOST-SECRET-CONTENT-b81f"
	hostFile := filepath.Join(e.root, "secret.txt")
	writeFile(t, hostFile, secret+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := e.sess.CallErr(ctx, "apply_cline_edits", map[string]any{"prompt": "Leak fake:attack_symlink?linger_ms=900&target=" + url.QueryEscape(hostFile),
		"cwd": e.work, "isolation": "docker"}, "tok-leak")
	if err != nil {
		t.Fatal(err)
	}
	sc := mcpsession.Structured(t, res)
	wantDockerOK(t, sc)
	if !strings.Contains(mcpsession.Str(sc, "text"), `"symlink":"ok"`) {
		t.Fatalf("the attack did not create its link: %s", sc["text"])
	}
	if target, err := os.Readlink(filepath.Join(e.work, "leak.txt")); err != nil || target != hostFile {
		t.Fatalf("the link is not on the host as planted: %q %v", target, err)
	}
	if files := mcpsession.ChangedFiles(sc); files["leak.txt"] != "A" {
		t.Errorf("changedFiles %v, want leak.txt A", files)
	}
	if !strings.Contains(mcpsession.Str(sc, "diff"), "+"+hostFile) {
		t.Errorf("the diff does not show the link as a link:\n%s", sc["diff"])
	}
	all, _ := e.sess.Lines()
	if wire := strings.Join(all, "\n"); strings.Contains(wire, secret) {
		t.Fatalf("the host file's content went out on the MCP wire (diff, text, tails or progress)")
	}
	if len(e.sess.Notifications("notifications/progress")) == 0 {
		t.Errorf("no progress was sent, so its content was not checked")
	}
}

func TestDockerEscapeWeirdFileNames(t *testing.T) {
	e := newDockerEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hi\n"})
	sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Names fake:weird_names"})
	wantDockerOK(t, sc)
	names := []string{"-n", "--output=x", "new\nline.txt", "tab\tname.txt", "ctrl\x01name.txt", `quote"name.txt`, "space name.txt", "ünïcödé.txt"}
	files := mcpsession.ChangedFiles(sc)
	for _, n := range names {
		if files[n] != "A" {
			t.Errorf("changedFiles[%q] = %q, want A", n, files[n])
		}
	}
	if len(files) != len(names) {
		t.Errorf("changedFiles %q, want exactly %q", files, names)
	}
	for _, s := range []string{`"b/new\nline.txt"`, `"b/tab\tname.txt"`, `"b/ctrl\001name.txt"`, "b/-n", "b/--output=x"} {
		if !strings.Contains(mcpsession.Str(sc, "diff"), s) {
			t.Errorf("diff lacks %s:\n%s", s, sc["diff"])
		}
	}
	if exists(filepath.Join(e.work, "x")) {
		t.Errorf("a file name was read as an option")
	}
}
