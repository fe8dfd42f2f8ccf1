//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// gitImageErr is why the fake image with git could not be built (not on a Linux host).
var gitImageErr error

func init() {
	beforeAll = append(beforeAll, func() error {
		if err := mcpsession.DockerAvailable(); err != nil {
			if os.Getenv("CI") == "true" {
				return fmt.Errorf("CI=true but the Docker engine is unavailable: %w", err)
			}
			dockerErr = err
			fmt.Fprintf(os.Stderr, "!!! the Docker tests of the server will be SKIPPED: %v\n", err)
			return nil
		}
		if err := mcpsession.BuildFakeImage(bins); err != nil {
			return err
		}
		gitImageErr = mcpsession.BuildFakeImageWithGit()
		if errors.Is(gitImageErr, mcpsession.ErrNoHostGitImage) && os.Getenv("CI") != "true" {
			fmt.Fprintf(os.Stderr, "!!! the git-in-the-sandbox test will be SKIPPED: %v\n", gitImageErr)
			return nil
		}
		return gitImageErr
	})
	afterAll = append(afterAll, func(int) error {
		if dockerErr != nil {
			return nil
		}
		ids, err := mcpsession.ServerContainers()
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			return fmt.Errorf("leak: %d container(s) of this suite's servers left behind: %v", len(ids), ids)
		}
		return nil
	})
}

func newDockerEnv(t *testing.T, args ...string) *env { return newEngineEnv(t, defaultEngine, args...) }

func dockerCall(e *env, tool string, args map[string]any) (map[string]any, string) {
	args["isolation"] = "docker"
	res, sc := e.call(tool, args)
	return sc, mcpsession.Text(res)
}

func wantDockerOK(t *testing.T, sc map[string]any) {
	t.Helper()
	if sc["ok"] != true {
		t.Fatalf("got failure %v: %v", sc["kind"], sc["message"])
	}
	if sc["isolation"] != "docker" || fmt.Sprint(sc["attemptIsolation"]) != "[docker]" {
		t.Fatalf("got isolation %v %v, want docker", sc["isolation"], sc["attemptIsolation"])
	}
}

// callTemps lists the per-call private dirs (settings copies, tool policy) left in TMPDIR.
func callTemps(e *env) []string {
	m, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-call-*"))
	return m
}

func TestDockerAskCline(t *testing.T) { testDockerAskCline(t, defaultEngine) }

func testDockerAskCline(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	if sc["text"] != "PONG" {
		t.Errorf("got text %v", sc["text"])
	}
	if left := callTemps(e); len(left) > 0 {
		t.Errorf("private settings copies left behind: %v", left)
	}
}

func TestDockerFloorRefusesHost(t *testing.T) {
	e := newDockerEnv(t, "--isolation", "docker")
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply with PONG", "isolation": "host"})
	mcpsession.WantKind(t, res, sc, "launch_failed")
	sc2, _ := func() (map[string]any, string) {
		_, s := e.call("ask_cline", map[string]any{"prompt": "Reply with PONG"})
		return s, ""
	}()
	wantDockerOK(t, sc2)
}

func TestDockerAskClineCannotWriteCwd(t *testing.T) {
	testDockerAskClineCannotWriteCwd(t, defaultEngine)
}

func testDockerAskClineCannotWriteCwd(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Change things fake:try_mutate"})
	wantDockerOK(t, sc)
	for _, f := range []string{"mutated.txt", "touched.txt"} {
		if _, err := os.Stat(filepath.Join(e.work, f)); !os.IsNotExist(err) {
			t.Errorf("an analysis container changed the cwd: %s exists", f)
		}
	}
	sc, _ = dockerCall(e, "ask_cline", map[string]any{"prompt": "Probe fake:probe_write?keep=true"})
	wantDockerOK(t, sc)
	var rep map[string]map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("probe report %q: %v", sc["text"], err)
	}
	for _, k := range []string{"root", "etc", "cwd"} {
		if rep[k]["result"] == "ok" {
			t.Errorf("probe wrote to %s (%v) inside the container", k, rep[k]["path"])
		}
	}
	// The parent of cwd exists in the container only as a mount point; under /tmp it lies on
	// the container's own tmpfs. Whatever the probe could write there must not reach the host.
	for _, k := range []string{"root", "etc", "parent", "cwd"} {
		dir, _ := rep[k]["path"].(string)
		if m, _ := filepath.Glob(filepath.Join(dir, ".fake-cline-probe-*")); len(m) > 0 {
			t.Errorf("a file written in the container appeared on the host: %v", m)
		}
	}
	for _, k := range []string{"tmp", "home"} {
		if rep[k]["result"] != "ok" {
			t.Errorf("the container's %s tmpfs is not writable: %v", k, rep[k])
		}
	}
}

func TestDockerApplyEditsAndOwnership(t *testing.T) {
	testDockerApplyEditsAndOwnership(t, defaultEngine)
}

func testDockerApplyEditsAndOwnership(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n", "gone.txt": "bye\n", "old.txt": "old\n"})
	sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Edit fake:edit_many?modify=README.md&create=new_file.txt&delete=gone.txt&rename=old.txt:renamed.txt"})
	wantDockerOK(t, sc)
	files := mcpsession.ChangedFiles(sc)
	for p, st := range map[string]string{"README.md": "M", "new_file.txt": "A", "gone.txt": "D", "renamed.txt": "R"} {
		if files[p] != st {
			t.Errorf("changedFiles[%s] = %q, want %q (all %v)", p, files[p], st, files)
		}
	}
	st, err := os.Stat(filepath.Join(e.work, "new_file.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := fileUID(st); uid != os.Getuid() {
		t.Errorf("file created in the container is owned by uid %d, want the caller's %d", uid, os.Getuid())
	}
}

func TestDockerApplyCannotCommit(t *testing.T) { testDockerApplyCannotCommit(t, defaultEngine) }

func testDockerApplyCannotCommit(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	head := gitOut(t, e.work, "rev-parse", "HEAD")
	sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Sneak fake:sneak_ref"})
	wantDockerOK(t, sc)
	if files := mcpsession.ChangedFiles(sc); files["sneak.txt"] != "A" {
		t.Errorf("the host did not report the edit: %v", files)
	}
	if out := gitOut(t, e.work, "branch", "--list", "cline-sneaky"); out != "" {
		t.Errorf("the container created a branch through a read-only .git: %q", out)
	}
	if gitOut(t, e.work, "rev-parse", "HEAD") != head {
		t.Errorf("HEAD moved")
	}
	// The same scenario on the host does create the branch: the read-only mount is what stopped it.
	_, hsc := e.call("apply_cline_edits", map[string]any{"prompt": "Sneak fake:sneak_ref?path=sneak2.txt&name=host-sneaky", "cwd": e.work})
	if hsc["kind"] != "commit_created" {
		t.Errorf("on the host the scenario should be caught as commit_created, got %v %v", hsc["kind"], hsc["message"])
	}
}

func TestDockerWorkspace(t *testing.T) { testDockerWorkspace(t, defaultEngine) }

func testDockerWorkspace(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng)
	gitInit(t, e.work, map[string]string{"README.md": "committed\n"})
	sc, _ := dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": "Read fake:read?path=README.md"})
	wantDockerOK(t, sc)
	wt, _ := sc["worktree"].(map[string]any)
	if wt["removed"] != true {
		t.Errorf("worktree not removed: %v", wt)
	}
	if wts := worktreeList(t, e.work); len(wts) != 1 {
		t.Errorf("worktrees left: %v", wts)
	}
	// In a container the analysis keeps run_commands; what it writes into the worktree is
	// reported as touched and discarded with the worktree, never reaching the checkout.
	sc, _ = dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": "Try fake:try_mutate"})
	wantDockerOK(t, sc)
	wt, _ = sc["worktree"].(map[string]any)
	switch {
	case eng.copy:
		// Copied in and out: the workspace tools bring nothing back but the answer.
		if touched := fmt.Sprint(wt["touched"]); strings.Contains(touched, ".txt") {
			t.Errorf("touched report %v: want nothing, a copied worktree brings nothing back", touched)
		}
	case !strings.Contains(fmt.Sprint(wt["touched"]), "touched.txt") || strings.Contains(fmt.Sprint(wt["touched"]), "mutated.txt"):
		t.Errorf("touched report %v: want touched.txt (run_commands) and not mutated.txt (editor disabled)", wt["touched"])
	}
	if _, err := os.Stat(filepath.Join(e.work, "touched.txt")); !os.IsNotExist(err) {
		t.Errorf("a write in the worktree reached the checkout")
	}
}

func TestDockerOverrideKeepsNeitherTokenNorTrackedFields(t *testing.T) {
	testDockerOverrideKeepsNeitherTokenNorTrackedFields(t, defaultEngine)
}

func testDockerOverrideKeepsNeitherTokenNorTrackedFields(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng)
	e.writeProviders(mcpsession.ProvidersTwo)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "go fake:token_refresh?token=tok-docker-1", "provider": "openai-native", "model": "gpt-in-container"})
	wantDockerOK(t, sc)
	p := e.readProviders()
	if p["lastUsedProvider"] != "openai-compatible" || mcpsession.Dig(p, "providers", "openai-native", "settings", "model") != "gpt-saved" {
		t.Errorf("tracked fields leaked from the container's copy: lastUsedProvider=%v model=%v", p["lastUsedProvider"], mcpsession.Dig(p, "providers", "openai-native", "settings", "model"))
	}
	// Nothing about credentials comes back from a container: the run's token is dropped
	// with a warning naming the field.
	if got := mcpsession.Dig(p, "providers", "openai-native", "settings", "auth", "accessToken"); got == "tok-docker-1" {
		t.Errorf("the container's token reached the host: %v", got)
	}
	if w := fmt.Sprint(sc["warnings"]); !strings.Contains(w, "providers.openai-native.settings.auth.accessToken") || strings.Contains(w, "tok-docker-1") {
		t.Errorf("warnings %s, want the dropped token named, not its value", w)
	}
}

func TestDockerOverridesRunConcurrently(t *testing.T) {
	e := newDockerEnv(t)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := map[string]any{"prompt": "go fake:slow?seconds=5&interval_ms=500", "model": fmt.Sprintf("m-%d", i), "isolation": "docker", "cwd": e.work}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if sc := mcpsession.Structured(t, e.sess.Call(ctx, "ask_cline", args)); sc["ok"] != true {
				t.Errorf("call %d: %v %v", i, sc["kind"], sc["message"])
			}
		}(i)
	}
	go func() { wg.Wait(); close(done) }()
	// Overlap is structural, not timed: at some moment both runs' containers exist. Serialised
	// runs (an exclusive lock around the run) would never have two at once.
	most := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(20 * time.Millisecond):
			if ids, err := defaultEngine.containers(); err == nil && len(ids) > most {
				most = len(ids)
			}
		}
	}
	if most < 2 {
		t.Errorf("at most %d container(s) ran at once; two Docker override runs should overlap (no exclusive lock for the run)", most)
	}
}

func TestDockerTimeoutAndCancelLeaveNothing(t *testing.T) {
	testDockerTimeoutAndCancelLeaveNothing(t, defaultEngine)
}

func testDockerTimeoutAndCancelLeaveNothing(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	sc, _ := dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": "go fake:hang", "timeoutSeconds": 2})
	if sc["kind"] != "timeout" {
		t.Fatalf("got %v %v, want timeout", sc["kind"], sc["message"])
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.sess.CallErr(ctx, "ask_cline", map[string]any{"prompt": "go fake:hang", "cwd": e.work, "isolation": "docker"}, nil)
	}()
	if !mcpsession.Eventually(30*time.Second, func() bool { ids, _ := eng.containers(); return len(ids) > 0 }) {
		t.Fatal("the container never appeared")
	}
	cancel()
	<-done
	if !mcpsession.Eventually(15*time.Second, func() bool { ids, _ := eng.containers(); return len(ids) == 0 }) {
		ids, _ := eng.containers()
		t.Errorf("containers left after cancel: %v", ids)
	}
	if !mcpsession.Eventually(10*time.Second, func() bool { return len(callTemps(e)) == 0 }) {
		t.Errorf("settings copies left: %v", callTemps(e))
	}
	wantWithheld(t, e.sess, "")
	if wts := worktreeList(t, e.work); len(wts) != 1 {
		t.Errorf("worktrees left: %v", wts)
	}
}

func TestDockerEngineDown(t *testing.T) {
	mcpsession.NeedDocker(t)
	e := newEnv(t, "--docker-image", mcpsession.FakeImage)
	// Point this server at a dead engine by restarting it with DOCKER_HOST set.
	e.sess.Stop()
	e.startWithEnv([]string{"DOCKER_HOST=unix://" + filepath.Join(t.TempDir(), "dead.sock")}, "--docker-image", mcpsession.FakeImage)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	if sc["kind"] != "launch_failed" || !strings.Contains(mcpsession.Str(sc, "message"), "Docker engine") {
		t.Errorf("got %v %q, want launch_failed naming the Docker engine", sc["kind"], sc["message"])
	}
	if len(e.records()) != 0 {
		t.Errorf("fell back to the host")
	}
	e.sess.Stop()
	e.start("--docker-image", "cline-mcp/no-such-image:nope")
	sc, _ = dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	if sc["kind"] != "launch_failed" || !strings.Contains(mcpsession.Str(sc, "message"), "make image") {
		t.Errorf("got %v %q, want launch_failed telling to build the image", sc["kind"], sc["message"])
	}
}

func TestDockerEscapeProbes(t *testing.T) { testDockerEscapeProbes(t, defaultEngine) }

func testDockerEscapeProbes(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng, "--docker-pids", "32")
	probe := func(prompt string) map[string]any {
		t.Helper()
		sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": prompt})
		wantDockerOK(t, sc)
		var rep map[string]any
		if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
			t.Fatalf("probe report %q: %v", sc["text"], err)
		}
		return rep
	}
	if rep := probe("Probe fake:probe_read?path=" + e.providers); rep["ok"] != false {
		t.Errorf("the container read the host's real settings file: %v", rep)
	}
	caps := probe("Probe fake:probe_caps")
	chown := "chown_root"
	if os.Getuid() == 0 {
		chown = "chown_nobody" // as root, chown to root of a root-owned file is a no-op anyone may do
	}
	for _, k := range []string{chown, "mknod_null", "raw_socket"} {
		if caps[k] == "ok" {
			t.Errorf("capability probe %s succeeded inside the container", k)
		}
	}
	if st, _ := caps["status"].(map[string]any); st["CapEff"] != "0000000000000000" || st["NoNewPrivs"] != "1" {
		t.Errorf("container has capabilities or may gain privileges: %v", st)
	}
	net := probe("Probe fake:probe_net?addr=1.1.1.1:443")
	if tcp, _ := net["tcp"].(map[string]any); tcp["result"] == "ok" {
		t.Errorf("network none: a TCP connect succeeded")
	}
	// The limit counts threads too, so the probe's own Go runtime may be the one refused a new
	// thread and crash; either outcome shows the limit, a clean report of 100 started does not.
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Probe fake:probe_pids?n=100&hold=5"})
	if sc["ok"] == true {
		var pids map[string]any
		if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &pids); err != nil {
			t.Fatalf("probe report %q: %v", sc["text"], err)
		}
		if started, _ := pids["started"].(float64); started >= 100 {
			t.Errorf("pids limit not enforced: started %v of 100", started)
		}
	} else {
		evidence := strings.ToLower(mcpsession.Str(sc, "stderrTail") + mcpsession.Str(sc, "message"))
		// A Go runtime refused a thread dies with exit 2 and a goroutine dump whose first line
		// (the reason) the 2,000-character tail may have cut off.
		goCrash := mcpsession.Num(sc, "exitCode") == 2 && strings.Contains(evidence, "goroutine ")
		if !goCrash && !strings.Contains(evidence, "resource temporarily unavailable") && !strings.Contains(evidence, "failed to create new os thread") {
			t.Errorf("the pids probe failed for another reason: %v %v\n%s", sc["kind"], sc["message"], sc["stderrTail"])
		}
	}
}

func TestDockerGitInsideTheSandbox(t *testing.T) { testDockerGitInsideTheSandbox(t, defaultEngine) }

func testDockerGitInsideTheSandbox(t *testing.T, eng engine) {
	if gitImageErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the fake image with git could not be built: %v", gitImageErr)
		}
		t.Skipf("!!! SKIPPED: %v", gitImageErr)
	}
	e := newEngineEnv(t, eng, "--docker-image", mcpsession.FakeImageGit)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	head := gitOut(t, e.work, "rev-parse", "HEAD")
	probe := func(tool string) map[string]map[string]any {
		t.Helper()
		sc, _ := dockerCall(e, tool, map[string]any{"prompt": "Probe fake:probe_git"})
		wantDockerOK(t, sc)
		var rep map[string]map[string]any
		if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
			t.Fatalf("probe report %q: %v", sc["text"], err)
		}
		t.Logf("%s: %v", tool, rep)
		return rep
	}
	// The workspace container reads the history of the worktree, and cannot write outside the
	// worktree's own metadata: a commit needs the shared object store, which is read-only.
	ws := probe("ask_cline_workspace")
	if ws["log"]["ok"] != true || !strings.Contains(fmt.Sprint(ws["log"]["output"]), "init") {
		t.Errorf("git log inside the workspace container: %v", ws["log"])
	}
	if ws["commit"]["ok"] == true {
		t.Errorf("a commit succeeded inside the workspace container: %v", ws["commit"])
	}
	// apply_cline_edits: history readable, commits impossible.
	ap := probe("apply_cline_edits")
	if ap["log"]["ok"] != true {
		t.Errorf("git log inside the apply container: %v", ap["log"])
	}
	if ap["commit"]["ok"] == true {
		t.Errorf("a commit succeeded inside the apply container: %v", ap["commit"])
	}
	if got := gitOut(t, e.work, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved from %s to %s", head, got)
	}
}

func TestRetryIsolationDocker(t *testing.T) {
	e := newDockerEnv(t, "--retry-isolation", "docker")
	_, sc := e.call("ask_cline", map[string]any{"prompt": "go fake:http_429"})
	if sc["kind"] != "transient_provider_error" || mcpsession.Num(sc, "attempts") != 2 {
		t.Fatalf("got %v after %v attempts", sc["kind"], sc["attempts"])
	}
	if got := fmt.Sprint(sc["attemptIsolation"]); got != "[host docker]" {
		t.Errorf("got attemptIsolation %s, want [host docker]", got)
	}
	if n := len(e.records()); n != 1 {
		t.Errorf("got %d host runs, want 1 (the retry runs in a container)", n)
	}
}
