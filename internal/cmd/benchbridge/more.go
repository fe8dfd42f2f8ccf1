package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// benchWorkspace compares, on a generated repository of files files, an ask_cline_workspace call
// (worktree add, fake run, worktree remove) with raw `git worktree add --detach` + `git worktree
// remove --force`, and times an apply_cline_edits call that changes nothing (evidence before and
// after, the diff). With baseline (another cline-mcp binary, e.g. built from main) each call is
// also made against it, interleaved, and the ratio of the medians is printed; with image, the
// workspace call runs in a container too (which adds the touched-files report).
func benchWorkspace(server, baseline, fake, image string, files, n int) error {
	if files <= 0 {
		return nil
	}
	root, repo, env, err := benchRepoHome("benchbridge-ws-", files)
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	var extra []string
	if image != "" {
		extra = []string{"--docker-image", image, "--docker-network", "none"}
	}
	servers := []string{server}
	if baseline != "" {
		servers = append(servers, baseline)
	}
	sessions := make([]*session, len(servers))
	for i, bin := range servers {
		s, err := startServer(bin, fake, env, repo, extra...)
		if err != nil {
			return err
		}
		defer s.close()
		sessions[i] = s
	}
	// timed runs each server's call once per round, alternating the order.
	timed := func(name string, args map[string]any) error {
		times := make([][]time.Duration, len(sessions))
		for i := 0; i < n+1; i++ {
			for j := range sessions {
				k := (i + j) % len(sessions)
				start := time.Now()
				if err := sessions[k].callTool(name, args); err != nil {
					return fmt.Errorf("%s (%s): %w", name, servers[k], err)
				}
				if i > 0 { // the first round warms caches
					times[k] = append(times[k], time.Since(start))
				}
			}
		}
		line := fmt.Sprintf("  %s call p50 %.0f ms", name, ms(median(times[0])))
		if len(times) > 1 {
			line += fmt.Sprintf(", baseline p50 %.0f ms (ratio %.2fx)", ms(median(times[1])), float64(median(times[0]))/float64(median(times[1])))
		}
		if iso, _ := args["isolation"].(string); iso != "" {
			line += " [" + iso + "]"
		}
		fmt.Println(line)
		return nil
	}

	var raw []time.Duration
	for i := 0; i < n; i++ {
		wt := filepath.Join(root, "raw-"+strconv.Itoa(i))
		start := time.Now()
		if err := gitRun(repo, "worktree", "add", "-q", "--detach", wt, "HEAD"); err != nil {
			return err
		}
		if err := gitRun(repo, "worktree", "remove", "--force", wt); err != nil {
			return err
		}
		raw = append(raw, time.Since(start))
	}
	fmt.Printf("workspace and apply (%d files, n=%d): raw worktree add+remove p50 %.0f ms\n", files, n, ms(median(raw)))
	if err := timed("ask_cline_workspace", map[string]any{"prompt": "Reply with PONG", "cwd": repo}); err != nil {
		return err
	}
	if err := timed("apply_cline_edits", map[string]any{"prompt": "Reply with PONG", "cwd": repo}); err != nil {
		return err
	}
	if err := benchPool(server, fake, env, repo, sessions[0], n); err != nil {
		return err
	}
	if image != "" {
		if err := timed("ask_cline_workspace", map[string]any{"prompt": "Reply with PONG", "cwd": repo, "isolation": "docker"}); err != nil {
			return err
		}
	}
	return nil
}

// benchPool times ask_cline_workspace through a server with --workspace-pool 1 against plain
// (a session of the same binary without the pool), interleaved, after one untimed call that
// fills the pool.
func benchPool(server, fake string, env []string, repo string, plain *session, n int) error {
	pooled, err := startServer(server, fake, env, repo, "--workspace-pool", "1")
	if err != nil {
		return err
	}
	defer pooled.close()
	args := map[string]any{"prompt": "Reply with PONG", "cwd": repo}
	var with, without []time.Duration
	for i := 0; i < n+1; i++ {
		for j := range 2 {
			s, into := pooled, &with
			if (i+j)%2 == 1 {
				s, into = plain, &without
			}
			start := time.Now()
			if err := s.callTool("ask_cline_workspace", args); err != nil {
				return fmt.Errorf("ask_cline_workspace (pool): %w", err)
			}
			if i > 0 {
				*into = append(*into, time.Since(start))
			}
		}
	}
	fmt.Printf("  ask_cline_workspace call with --workspace-pool 1 p50 %.0f ms, without p50 %.0f ms (ratio %.2fx)\n",
		ms(median(with)), ms(median(without)), float64(median(with))/float64(median(without)))
	return nil
}

// benchDocker compares a Docker-isolated ask_cline call through the server with `docker run
// --rm` of the same image and argv.
func benchDocker(server, fake, image string, n int) error {
	if image == "" {
		return nil
	}
	root, work, env, err := benchWorld("benchbridge-docker-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	s, err := startServer(server, fake, env, work, "--isolation", "docker", "--docker-image", image, "--docker-network", "none")
	if err != nil {
		return err
	}
	defer s.close()
	var cli, call []time.Duration
	for i := 0; i < n+2; i++ {
		cmd := exec.Command("docker", "run", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL",
			"--tmpfs", "/tmp", "--tmpfs", "/home/cline", "-v", work+":"+work+":ro", "-w", work, image,
			"--json", "--auto-approve", "true", "--thinking", "none", "-c", work, "Reply with PONG")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("docker run: %w", err)
		}
		d1 := time.Since(start)
		start = time.Now()
		if err := s.call("Reply with PONG"); err != nil {
			return err
		}
		d2 := time.Since(start)
		if i >= 2 {
			cli, call = append(cli, d1), append(call, d2)
		}
	}
	fmt.Printf("docker (n=%d): `docker run --rm` p50 %.0f ms, Docker-isolated ask_cline call p50 %.0f ms (docker run / call = %.2fx)\n",
		n, ms(median(cli)), ms(median(call)), float64(median(cli))/float64(median(call)))
	return nil
}

// genRepo writes a committed git repository of files one-line files in directories of 100.
func genRepo(repo string, files int) error {
	for i := 0; i < files; i++ {
		p := filepath.Join(repo, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("line "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
			return err
		}
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "gen"}} {
		if err := gitRun(repo, a...); err != nil {
			return err
		}
	}
	return nil
}

func gitRun(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v: %s", args, err, out)
	}
	return nil
}

// benchHome makes root/home with a Cline settings file and returns the server's environment.
// benchWorld is a temp root (the caller removes it) holding an empty work dir and a home for
// the fake CLI, and the environment of a server there.
func benchWorld(prefix string) (root, work string, env []string, err error) {
	if root, err = os.MkdirTemp("", prefix); err != nil {
		return "", "", nil, err
	}
	work = filepath.Join(root, "work")
	if err = os.MkdirAll(work, 0o755); err == nil {
		env, err = benchHome(root)
	}
	if err != nil {
		os.RemoveAll(root)
		return "", "", nil, err
	}
	return root, work, env, nil
}

func benchHome(root string) ([]string, error) {
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(filepath.Join(home, ".cline", "data", "settings"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, ".cline", "data", "settings", "providers.json"), []byte(providers), 0o600); err != nil {
		return nil, err
	}
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir()}, nil
}

// benchRepoHome makes a temp root with a generated repository of files files (root/repo) and a
// home with Cline settings; the caller removes root.
func benchRepoHome(prefix string, files int) (root, repo string, env []string, err error) {
	root, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", "", nil, err
	}
	repo = filepath.Join(root, "repo")
	if err = genRepo(repo, files); err == nil {
		env, err = benchHome(root)
	}
	if err != nil {
		os.RemoveAll(root)
		return "", "", nil, err
	}
	return root, repo, env, nil
}
