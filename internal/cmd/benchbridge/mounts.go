package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// benchMounts compares one Docker-isolated call in bind mode and in copy mode (the checkout and
// the settings copy copied in through the engine's archive API, apply_cline_edits' tree copied
// back and compared) on a generated repository, for ask_cline and apply_cline_edits. Calls of
// the two modes alternate, so both see the same machine noise; it reports the medians and
// their ratio.
func benchMounts(server, fake, image string, files, n int) error {
	if image == "" || files <= 0 {
		return nil
	}
	root, repo, env, err := benchRepoHome("benchbridge-mounts-", files)
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	base := []string{"--isolation", "docker", "--docker-image", image, "--docker-network", "none"}
	bind, err := startServer(server, fake, env, repo, append(base, "--docker-mounts", "bind")...)
	if err != nil {
		return err
	}
	defer bind.close()
	cp, err := startServer(server, fake, env, repo, append(base, "--docker-mounts", "copy")...)
	if err != nil {
		return err
	}
	defer cp.close()
	for _, tool := range []string{"ask_cline", "apply_cline_edits"} {
		var tb, tc []time.Duration
		for i := 0; i < n+1; i++ {
			args := func() map[string]any {
				prompt := "Reply with PONG"
				if tool == "apply_cline_edits" {
					prompt = "Edit fake:edit?path=bench.txt&content=" + strconv.Itoa(i)
				}
				return map[string]any{"prompt": prompt, "cwd": repo}
			}
			order := []*session{bind, cp}
			if i%2 == 1 {
				order = []*session{cp, bind}
			}
			for _, s := range order {
				start := time.Now()
				if err := s.callTool(tool, args()); err != nil {
					return fmt.Errorf("%s: %w", tool, err)
				}
				if i == 0 {
					continue // the first call of each server probes and warms up
				}
				if s == bind {
					tb = append(tb, time.Since(start))
				} else {
					tc = append(tc, time.Since(start))
				}
			}
		}
		fmt.Printf("docker mounts, %s (%d files, n=%d): bind p50 %.0f ms p95 %.0f ms, copy p50 %.0f ms p95 %.0f ms (copy/bind p50 %.2fx, p95 %.2fx)\n",
			tool, files, n, ms(median(tb)), ms(pct(tb, 0.95)), ms(median(tc)), ms(pct(tc, 0.95)),
			float64(median(tc))/float64(median(tb)), float64(pct(tc, 0.95))/float64(pct(tb, 0.95)))
	}
	return nil
}
