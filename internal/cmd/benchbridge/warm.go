package main

import (
	"fmt"
	"os"
	"time"
)

// benchWarm times ask_cline on the fake CLI through three servers side by side, one call of
// each in turn: host isolation, Docker with a new container per call, and Docker with warm
// containers (--docker-warm); with baseline (another cline-mcp binary, e.g. built from main) a
// fourth server, warm containers of that binary, in the same rounds. After each call it waits
// gap, so that what a server does in the background after a call (removing the used container,
// making its replacement) does not land in the next server's call. It prints p50 and p95 of
// each and the ratios to the host call; it asserts nothing. A warm server's first call is cold
// (it teaches the pool the calls' shape) and is not counted, nor are the others' first two.
func benchWarm(server, baseline, fake, image string, n, pool int, gap time.Duration) error {
	if image == "" {
		return nil
	}
	root, work, env, err := benchWorld("benchbridge-warm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	docker := dockerArgs(image)
	warm := append(append([]string{}, docker...), "--docker-warm", fmt.Sprint(pool))
	type benchServer struct {
		name, bin string
		args      []string
		took      []time.Duration
	}
	servers := []*benchServer{
		{name: "host", bin: server},
		{name: "docker cold", bin: server, args: docker},
		{name: fmt.Sprintf("docker warm (--docker-warm %d)", pool), bin: server, args: warm},
	}
	if baseline != "" {
		servers = append(servers, &benchServer{name: "docker warm, baseline", bin: baseline, args: warm})
	}
	sessions, closeAll, err := startServers(fake, env, work, len(servers), func(i int) (string, string, []string) {
		return servers[i].name, servers[i].bin, servers[i].args
	})
	defer closeAll()
	if err != nil {
		return err
	}
	for round := 0; round < n+2; round++ {
		for i := range servers {
			start := time.Now()
			if err := sessions[i].call("Reply with PONG"); err != nil {
				return fmt.Errorf("%s: %w", servers[i].name, err)
			}
			if round >= 2 {
				servers[i].took = append(servers[i].took, time.Since(start))
			}
			time.Sleep(gap)
		}
	}
	host := servers[0].took
	fmt.Printf("warm containers (ask_cline, fake CLI, n=%d each, interleaved, %v between calls):\n", n, gap)
	for _, sv := range servers {
		fmt.Printf("  %-28s p50 %7.1f ms  p95 %7.1f ms  (p50 %.2fx host, p95 %.2fx host)\n", sv.name,
			ms(median(sv.took)), ms(pct(sv.took, 0.95)),
			float64(median(sv.took))/float64(median(host)), float64(pct(sv.took, 0.95))/float64(pct(host, 0.95)))
	}
	cold, hot := servers[1].took, servers[2].took
	fmt.Printf("  warm / cold Docker: p50 %.2fx\n", float64(median(hot))/float64(median(cold)))
	if baseline != "" {
		fmt.Printf("  warm / baseline warm: p50 %.2fx\n", float64(median(hot))/float64(median(servers[3].took)))
	}
	return nil
}
