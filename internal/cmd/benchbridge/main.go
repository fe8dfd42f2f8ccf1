// Command benchbridge measures what the bridge adds on top of the CLI: the latency of an
// ask_cline call through the stdio server against exec'ing fake-cline directly, and the
// server's peak RSS for small and huge CLI output. It prints numbers; it asserts nothing
// (shared machines are noisy). Linux only for the RSS part (/proc/<pid>/status VmHWM).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const providers = `{"version":1,"lastUsedProvider":"openai-compatible","modes":{},"providers":{"openai-compatible":{"settings":{"provider":"openai-compatible","apiKey":"sk-test-123","model":"fake-model","baseUrl":"http://127.0.0.1:18080/v1"},"updatedAt":"2026-01-01T00:00:00.000Z","tokenSource":"manual"}}}`

// dockerExtra is what -docker-arg adds to the Docker servers' flags.
var dockerExtra []string

// dockerArgs is the flags of a Docker server of image (network none), with -docker-arg's.
func dockerArgs(image string) []string {
	return append([]string{"--isolation", "docker", "--docker-image", image, "--docker-network", "none"}, dockerExtra...)
}

func main() {
	server := flag.String("cline-mcp", "bin/cline-mcp", "built server")
	fake := flag.String("fake", "bin/fake-cline", "built fake CLI")
	n := flag.Int("n", 40, "calls per latency sample")
	huge := flag.Int64("huge", 1<<30, "bytes of CLI output for the large RSS sample")
	wsFiles := flag.Int("workspace-files", 10000, "files in the generated repo of the workspace and Docker mounts benchmarks (0 skips them)")
	only := flag.String("only", "", "run only this benchmark: mounts, workspace (the workspace, apply and worktree pool calls), warm (host, cold and warm Docker calls), or sessions (later turns of a host and a Docker ACP session, then first turns of new conversations: host, Docker, Docker with spares)")
	warmN := flag.Int("warm-n", 20, "calls per server in the warm containers benchmark")
	warmGap := flag.Duration("warm-gap", time.Second, "pause after each call of the warm containers benchmark (a server's background work after a call stays out of the next call)")
	image := flag.String("docker-image", "", "fake CLI image for the Docker benchmark (empty skips it)")
	baseline := flag.String("baseline-cline-mcp", "", "a second cline-mcp binary (e.g. built from main) timed interleaved with -cline-mcp in the workspace and apply benchmark, the warm containers benchmark and the sessions benchmark")
	flag.Func("docker-arg", "an extra server flag for the Docker servers of the warm and sessions benchmarks (repeatable), e.g. -docker-arg=--docker-mounts -docker-arg=copy", func(v string) error {
		dockerExtra = append(dockerExtra, v)
		return nil
	})
	flag.Parse()
	if *only == "mounts" {
		if err := benchMounts(*server, *fake, *image, *wsFiles, 20); err != nil {
			fmt.Fprintln(os.Stderr, "benchbridge:", err)
			os.Exit(1)
		}
		return
	}
	if *only == "sessions" {
		if err := benchSessions(*server, *baseline, *fake, *image, *warmN, *warmGap); err != nil {
			fmt.Fprintln(os.Stderr, "benchbridge:", err)
			os.Exit(1)
		}
		if err := benchFirstTurns(*server, *baseline, *fake, *image, *warmN, *warmGap); err != nil {
			fmt.Fprintln(os.Stderr, "benchbridge:", err)
			os.Exit(1)
		}
		return
	}
	if *only == "warm" {
		if err := benchWarm(*server, *baseline, *fake, *image, *warmN, 2, *warmGap); err != nil {
			fmt.Fprintln(os.Stderr, "benchbridge:", err)
			os.Exit(1)
		}
		return
	}
	if *only == "workspace" {
		if err := benchWorkspace(*server, *baseline, *fake, *image, *wsFiles, 10); err != nil {
			fmt.Fprintln(os.Stderr, "benchbridge:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*server, *fake, *n, *huge); err != nil {
		fmt.Fprintln(os.Stderr, "benchbridge:", err)
		os.Exit(1)
	}
	if err := benchWorkspace(*server, *baseline, *fake, *image, *wsFiles, 10); err != nil {
		fmt.Fprintln(os.Stderr, "benchbridge:", err)
		os.Exit(1)
	}
	if err := benchDocker(*server, *fake, *image, 15); err != nil {
		fmt.Fprintln(os.Stderr, "benchbridge:", err)
		os.Exit(1)
	}
	if err := benchWarm(*server, *baseline, *fake, *image, *warmN, 2, *warmGap); err != nil {
		fmt.Fprintln(os.Stderr, "benchbridge:", err)
		os.Exit(1)
	}
	if err := benchMounts(*server, *fake, *image, *wsFiles, 20); err != nil {
		fmt.Fprintln(os.Stderr, "benchbridge:", err)
		os.Exit(1)
	}
}

func run(server, fake string, n int, huge int64) error {
	root, err := os.MkdirTemp("", "benchbridge-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	settingsDir := filepath.Join(home, ".cline", "data", "settings")
	for _, d := range []string{work, settingsDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(settingsDir, "providers.json"), []byte(providers), 0o600); err != nil {
		return err
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir()}

	// Direct: the same argv the bridge builds for ask_cline, without the policy file.
	direct := make([]time.Duration, 0, n)
	for i := 0; i < n+3; i++ {
		cmd := exec.Command(fake, "--json", "--auto-approve", "true", "--thinking", "none", "-c", work, "Reply with PONG")
		cmd.Env = append(env, "CLINE_NO_AUTO_UPDATE=1", "CLINE_SESSION_BACKEND_MODE=local")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("direct run: %w", err)
		}
		if i >= 3 {
			direct = append(direct, time.Since(start))
		}
	}

	s, err := startServer(server, fake, env, work)
	if err != nil {
		return err
	}
	bridged := make([]time.Duration, 0, n)
	for i := 0; i < n+3; i++ {
		start := time.Now()
		if err := s.call("Reply with PONG"); err != nil {
			return err
		}
		if i >= 3 {
			bridged = append(bridged, time.Since(start))
		}
	}
	// A model override runs on a private copy of providers.json that is merged back afterwards.
	overridden := make([]time.Duration, 0, n)
	for i := 0; i < n+3; i++ {
		start := time.Now()
		if err := s.callTool("ask_cline", map[string]any{"prompt": "Reply with PONG", "cwd": s.work, "model": "fake-model-2"}); err != nil {
			return err
		}
		if i >= 3 {
			overridden = append(overridden, time.Since(start))
		}
	}
	s.close()
	dp, bp, op := median(direct), median(bridged), median(overridden)
	fmt.Printf("latency (n=%d): fake-cline direct p50 %.2f ms, through cline-mcp p50 %.2f ms, added p50 %.2f ms (ratio %.2fx)\n",
		n, ms(dp), ms(bp), ms(bp-dp), float64(bp)/float64(dp))
	fmt.Printf("  direct p90 %.2f ms, bridged p90 %.2f ms\n", ms(pct(direct, 0.9)), ms(pct(bridged, 0.9)))
	fmt.Printf("  with a model override: p50 %.2f ms, added p50 %.2f ms over direct\n", ms(op), ms(op-dp))

	for _, size := range []int64{2 << 20, huge} {
		s, err := startServer(server, fake, env, work)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := s.call(fmt.Sprintf("Print a lot fake:huge?bytes=%d", size)); err != nil {
			return err
		}
		el := time.Since(start)
		hwm := vmHWM(s.cmd.Process.Pid)
		s.close()
		fmt.Printf("peak RSS of cline-mcp for %s of CLI output: %s (call took %.1f s, %.0f MB/s)\n",
			human(size), hwm, el.Seconds(), float64(size)/el.Seconds()/1e6)
	}
	return nil
}

type session struct {
	cmd   *exec.Cmd
	c     *client.Client
	stdin io.WriteCloser
	work  string
}

func startServer(server, fake string, env []string, work string, extra ...string) (*session, error) {
	cmd := exec.Command(server, append([]string{"--cline", fake, "--log-level", "error"}, extra...)...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "benchbridge", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, err
	}
	return &session{cmd: cmd, c: c, stdin: stdin, work: work}, nil
}

func (s *session) call(prompt string) error {
	return s.callTool("ask_cline", map[string]any{"prompt": prompt, "cwd": s.work})
}

func (s *session) callTool(tool string, args map[string]any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("call failed: %v", res.Content)
	}
	return nil
}

func (s *session) close() {
	s.stdin.Close()
	_ = s.cmd.Wait()
}

func vmHWM(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "n/a"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "n/a"
}

func median(d []time.Duration) time.Duration { return pct(d, 0.5) }

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}
