package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// keylessScenarios are what a hostile run of a key-less container (its provider key kept by
// the egress proxy) could do with the key the proxy lends it.
var keylessScenarios = map[string]scenarioDef{
	"attack_keyless": {doc: "after its marker: the run's API request (api=, default chat/completions) through its baseUrl, then every hostile method and path of the provider's origin through the forwarder and straight to the proxy, and an API request the upstream reflects (X-Fake-Reflect); with spend=N instead N API requests whose answers report usage= tokens (X-Fake-Usage), sse=true as a stream", run: runAttackKeyless},
}

// keylessHostile are the requests a run could send its provider's origin with the lent key:
// another API of a gateway, spellings that normalise elsewhere, methods it does not need.
var keylessHostile = [][2]string{
	{"GET", "/admin/keys"}, {"POST", "/key/generate"}, {"POST", "/v1/../admin"}, {"POST", "/v1/%2e%2e/admin"},
	{"POST", "//admin"}, {"TRACE", "/v1/chat/completions"}, {"DELETE", "/v1/files/file-abc"},
	{"GET", "/v1/chat/completions"}, {"POST", "/v1/chat%2fcompletions"}, {"POST", "/v1//chat/completions"},
	{"POST", "/v1/./chat/completions"}, {"POST", "/v1/chat/completions/../../admin"}, {"POST", "/v1%5cchat/completions"},
}

// runAttackKeyless is attack_keyless (see keylessScenarios).
func runAttackKeyless(s *session) int {
	return s.attack(func(r *obj) {
		base, key := providerSettings(s.paths.providers, s.provider)
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			r.step("base_url", fmt.Errorf("no usable baseUrl %q", base))
			return
		}
		api := u.Path + "/" + s.param("api", "chat/completions")
		auth := "Authorization: Bearer " + key
		if s.provider == "anthropic" {
			auth = "X-Api-Key: " + key
		}
		if n := s.intParam("spend", 0); n > 0 {
			hdr := []string{auth, "X-Fake-Usage: " + s.param("usage", "300000")}
			if s.param("sse", "") == "true" {
				hdr = append(hdr, "X-Fake-Stream: 1")
			}
			codes := []any{}
			for i := 0; i < n; i++ {
				codes = append(codes, statusOf(rawHTTP(u.Host, "POST", api, hdr)))
			}
			*r = append(*r, kv{"spend", codes})
			return
		}
		*r = append(*r, kv{"legit", rawHTTP(u.Host, "POST", api, []string{auth})})
		var fwd, direct []any
		for _, h := range keylessHostile {
			fwd = append(fwd, rawHTTP(u.Host, h[0], h[1], []string{auth}))
		}
		// A run that skips the forwarder and asks the proxy itself, with its token.
		if pu, err := url.Parse(os.Getenv("HTTPS_PROXY")); err == nil && pu.User != nil {
			tok := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":x"))
			for _, h := range keylessHostile {
				direct = append(direct, rawHTTP(pu.Host, h[0], "http://provider.cline-mcp.invalid"+h[1], []string{auth, tok}))
			}
		}
		*r = append(*r, kv{"hostile_forwarder", fwd}, kv{"hostile_direct", direct})
		*r = append(*r, kv{"reflect", rawHTTP(u.Host, "POST", api, []string{auth, "X-Fake-Reflect: 1"})})
	})
}

// rawHTTP sends one request to addr exactly as given (method and target unparsed) and reports
// the answer: status, the headers the upstream may have filled (X-Echo), and the body's start.
func rawHTTP(addr, method, target string, hdr []string) obj {
	r := obj{{"req", method + " " + target}}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return append(r, kv{"error", err.Error()})
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	body := `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n\r\n%s",
		method, target, addr, len(body), strings.Join(hdr, "\r\n"), body)
	if _, err := io.WriteString(c, req); err != nil {
		return append(r, kv{"error", err.Error()})
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return append(r, kv{"error", err.Error()})
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 600))
	return append(r, kv{"status", resp.StatusCode}, kv{"x_echo", resp.Header.Get("X-Echo")}, kv{"head", string(head)})
}

// statusOf is the status rawHTTP reported, or its error.
func statusOf(o obj) any {
	for _, f := range o {
		if f.k == "status" || f.k == "error" {
			return f.v
		}
	}
	return nil
}

// keylessUpstream is the fake provider's part for the key-less tests (`__fake_cline_serve`): it
// logs every request it receives with its credential headers (a line "upstream method=… uri=…
// authorization=… x-api-key=…" in the provider's output) and answers the API paths: with
// X-Fake-Reflect the request's credential headers in the body and in X-Echo (an upstream that
// reflects what it got), with X-Fake-Usage a completion reporting that many prompt tokens
// (JSON, or SSE with X-Fake-Stream). It returns false for what the serve handler answers itself.
func keylessUpstream(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == "/stream" {
		return false
	}
	fmt.Printf("upstream method=%s uri=%q authorization=%q x-api-key=%q\n", r.Method, r.RequestURI,
		r.Header.Values("Authorization"), r.Header.Get("X-Api-Key"))
	api := strings.HasSuffix(r.URL.Path, "/chat/completions") || strings.HasSuffix(r.URL.Path, "/messages") || strings.HasSuffix(r.URL.Path, "/responses")
	if !api {
		return false
	}
	// The credential lines the key-less tests read, as for .../echo.
	fmt.Printf("echo path=%s authorization=%q x-api-key=%q proxy-authorization=%q\n", r.URL.Path,
		r.Header.Values("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("Proxy-Authorization"))
	switch {
	case r.Header.Get("X-Fake-Reflect") != "":
		got := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		w.Header().Set("X-Echo", got)
		fmt.Fprintf(w, "debug: you sent credential %s", got)
	case r.Header.Get("X-Fake-Usage") != "":
		n := r.Header.Get("X-Fake-Usage")
		if r.Header.Get("X-Fake-Stream") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":%s,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", n)
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":%s,"completion_tokens":1}}`, n)
	default:
		fmt.Fprintf(w, "fake provider ok %s", r.URL.Path)
	}
	return true
}
