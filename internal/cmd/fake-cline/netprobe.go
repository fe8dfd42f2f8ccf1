package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// helperServe is the hidden argv[1] of the fake provider the egress tests run in a container:
// `cline __fake_cline_serve <addr>` answers every request with 200 "fake provider ok <path>"
// (and prints the credential headers of a request for .../echo on stdout),
// and GET /stream?mb=N with N MiB of SSE events (the throughput measurement). It prints
// "serving <addr>" once it listens.
const helperServe = "__fake_cline_serve"

func serveMain(args []string) int {
	addr := ":18080"
	if len(args) > 0 {
		addr = args[0]
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake provider:", err)
		return 1
	}
	fmt.Printf("serving %s\n", ln.Addr())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if keylessUpstream(w, r) { // every request logged; the key-less tests' API routes
			return
		}
		if r.URL.Path == "/stream" {
			mb, _ := strconv.Atoi(r.URL.Query().Get("mb"))
			w.Header().Set("Content-Type", "text/event-stream")
			line := []byte("data: " + strings.Repeat("x", 1016) + "\n\n") // 1 KiB per event
			for i := 0; i < mb*1024; i++ {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
			return
		}
		if strings.HasSuffix(r.URL.Path, "/echo") {
			// What the provider received, for the keyless tests (docker logs of the provider).
			fmt.Printf("echo path=%s authorization=%q x-api-key=%q proxy-authorization=%q\n", r.URL.Path,
				r.Header.Values("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("Proxy-Authorization"))
		}
		fmt.Fprintf(w, "fake provider ok %s", r.URL.Path)
	})
	if err := http.Serve(ln, h); err != nil {
		fmt.Fprintln(os.Stderr, "fake provider:", err)
		return 1
	}
	return 0
}

// netProbes are probe_net's optional tries through the environment's proxy (HTTPS_PROXY /
// HTTP_PROXY, as the real CLI uses them):
//   - get=<url>: a GET through the proxy; the status, the first bytes of the body, and for
//     /stream the byte count, SHA-256 and MB/s of the whole body;
//   - connect=<host:port>: a CONNECT through the proxy; the status line;
//   - direct=<url>: a GET without any proxy.
func netProbes(s *session) obj {
	r := obj{}
	if u := s.param("get", ""); u != "" {
		r = append(r, kv{"get", httpProbe(u, http.ProxyFromEnvironment)})
	}
	if u := s.param("direct", ""); u != "" {
		r = append(r, kv{"direct", httpProbe(u, nil)})
	}
	if t := s.param("connect", ""); t != "" {
		r = append(r, kv{"connect", connectProbe(t)})
	}
	return r
}

func httpProbe(raw string, proxy func(*http.Request) (*url.URL, error)) obj {
	c := &http.Client{Transport: &http.Transport{Proxy: proxy, DisableCompression: true}, Timeout: 5 * time.Minute}
	start := time.Now()
	resp, err := c.Get(raw)
	if err != nil {
		return obj{{"url", raw}, {"result", err.Error()}}
	}
	defer resp.Body.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(resp.Body, head)
	h := sha256.New()
	h.Write(head[:n])
	rest, err := io.Copy(h, resp.Body)
	total := int64(n) + rest
	secs := time.Since(start).Seconds()
	out := obj{{"url", raw}, {"result", "ok"}, {"status", resp.StatusCode}, {"head", string(head[:n])}, {"bytes", total},
		{"sha256", hex.EncodeToString(h.Sum(nil))}, {"seconds", secs}}
	if err != nil {
		out = append(out, kv{"error", err.Error()})
	}
	return out
}

// connectProbe asks the environment's HTTPS proxy for a tunnel to target and reports its answer.
func connectProbe(target string) obj { return rawProxy("HTTPS_PROXY", "CONNECT", target, target) }

// dnsProbe looks host up with a short deadline.
func dnsProbe(host string) obj {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupHost(ctx, host)
	dns := obj{{"host", host}, {"result", errString(err)}}
	if err == nil {
		dns = append(dns, kv{"addrs", ips})
	}
	return dns
}
