package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// benchSessions times the later turns of one ACP conversation (ask_cline, fake CLI) through two
// servers side by side, one turn of each in turn: on the host (a warm agent takes each turn) and
// in Docker (the session's live container takes each turn). The first turn of each, which starts
// the process (and the container), is not counted. It prints p50 and p95 of each and the ratio
// of the Docker session's to the host session's; it asserts nothing.
func benchSessions(server, baseline, fake, image string, n int, gap time.Duration) error {
	if image == "" {
		return errors.New("the sessions benchmark needs -image")
	}
	root, work, env, err := benchWorld("benchbridge-sessions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	acp := []string{"--cline-protocol", "acp", "--sessions-dir", filepath.Join(root, "sessions")}
	type benchServer struct {
		name string
		bin  string
		args []string
		id   string
		took []time.Duration
	}
	docker := append(append([]string{}, acp...), dockerArgs(image)...)
	servers := []*benchServer{
		{name: "host session", bin: server, args: acp},
		{name: "docker session", bin: server, args: docker},
	}
	if baseline != "" { // the same Docker session through another binary, in the same rounds
		servers = append(servers, &benchServer{name: "baseline session", bin: baseline, args: docker})
	}
	sessions, closeAll, err := startServers(fake, env, work, len(servers), func(i int) (string, string, []string) {
		return servers[i].name, servers[i].bin, servers[i].args
	})
	defer closeAll()
	if err != nil {
		return err
	}
	for turn := 0; turn <= n; turn++ {
		for i, sv := range servers {
			start := time.Now()
			id, err := sessions[i].turn("Reply with PONG", sv.id)
			if err != nil {
				return fmt.Errorf("%s, turn %d: %w", sv.name, turn+1, err)
			}
			if turn > 0 {
				sv.took = append(sv.took, time.Since(start))
			}
			sv.id = id
			time.Sleep(gap)
		}
	}
	host := servers[0].took
	fmt.Printf("live container sessions (ask_cline over ACP, fake CLI, %d later turns each, interleaved, %v between turns):\n", n, gap)
	for _, sv := range servers {
		fmt.Printf("  %-16s later turn p50 %7.1f ms  p95 %7.1f ms  (p50 %.2fx host)\n", sv.name,
			ms(median(sv.took)), ms(pct(sv.took, 0.95)), float64(median(sv.took))/float64(median(host)))
	}
	return nil
}

// benchFirstTurns times the first turns of new ACP conversations (ask_cline, fake CLI), one of
// each server in turn: on the host (a warm agent takes each), in Docker (a new container and CLI
// per conversation) and in Docker with warm containers (a spare agent, started and initialized
// before the call, takes each). The first two rounds are not counted. It prints p50 and p95 and
// the ratio to the host's; it asserts nothing.
func benchFirstTurns(server, baseline, fake, image string, n int, gap time.Duration) error {
	root, work, env, err := benchWorld("benchbridge-first-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	if err := genRepo(work, 10); err != nil { // ask_cline's usual directory: a repository
		return err
	}
	acp := func(extra ...string) []string {
		return append([]string{"--cline-protocol", "acp", "--sessions-dir", filepath.Join(root, "sessions", fmt.Sprint(len(extra)))}, extra...)
	}
	docker := dockerArgs(image)
	type benchServer struct {
		name string
		bin  string
		args []string
		took []time.Duration
	}
	servers := []*benchServer{
		{name: "host", bin: server, args: acp()},
		{name: "docker", bin: server, args: acp(docker...)},
		{name: "docker, warm 2", bin: server, args: acp(append(docker, "--docker-warm", "2")...)},
	}
	if baseline != "" { // the same warm server of another binary, in the same rounds
		servers = append(servers, &benchServer{name: "baseline, warm 2", bin: baseline, args: acp(append(docker, "--docker-warm", "2")...)})
	}
	sessions, closeAll, err := startServers(fake, env, work, len(servers), func(i int) (string, string, []string) {
		return servers[i].name, servers[i].bin, servers[i].args
	})
	defer closeAll()
	if err != nil {
		return err
	}
	for round := 0; round < n+2; round++ {
		for i, sv := range servers {
			start := time.Now()
			if _, err := sessions[i].turn("Reply with PONG", ""); err != nil {
				return fmt.Errorf("%s, conversation %d: %w", sv.name, round+1, err)
			}
			if round >= 2 {
				sv.took = append(sv.took, time.Since(start))
			}
			time.Sleep(gap)
		}
	}
	host := servers[0].took
	fmt.Printf("first turns of new conversations (ask_cline over ACP, fake CLI, %d each, interleaved, %v between calls):\n", n, gap)
	for _, sv := range servers {
		fmt.Printf("  %-16s first turn p50 %7.1f ms  p95 %7.1f ms  (p50 %.2fx host)\n", sv.name,
			ms(median(sv.took)), ms(pct(sv.took, 0.95)), float64(median(sv.took))/float64(median(host)))
	}
	return nil
}

// startServers starts n servers side by side in work, the i-th as spec(i) says (its name, binary
// and arguments); closeAll closes those that started, also after an error.
func startServers(fake string, env []string, work string, n int, spec func(i int) (name, bin string, args []string)) (_ []*session, closeAll func(), err error) {
	sessions := make([]*session, n)
	closeAll = func() {
		for _, s := range sessions {
			if s != nil {
				s.close()
			}
		}
	}
	for i := range n {
		name, bin, args := spec(i)
		if sessions[i], err = startServer(bin, fake, env, work, args...); err != nil {
			return sessions, closeAll, fmt.Errorf("%s: %w", name, err)
		}
	}
	return sessions, closeAll, nil
}

// turn is one ask_cline call of a conversation (id "": a new one); it returns the session id.
func (s *session) turn(prompt, id string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := map[string]any{"prompt": prompt, "cwd": s.work}
	if id != "" {
		args["sessionId"] = id
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "ask_cline"
	req.Params.Arguments = args
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("call failed: %v", res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.SessionID == "" {
		return "", fmt.Errorf("no sessionId in the result: %s", b)
	}
	return out.SessionID, nil
}
