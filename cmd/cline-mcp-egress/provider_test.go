package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// TestProviderListenerAddsCredentialAtProxy: a request the run sends to the forwarder's provider
// listener (its settings' baseUrl) reaches the provider over TLS through the proxy's unix socket
// with the credential the proxy holds, and without the placeholder key the run sent; the
// streamed answer comes back whole.
func TestProviderListenerAddsCredentialAtProxy(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the forwarder runs in Linux containers")
	}
	var gotAuth, gotPath string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 3; i++ {
			_, _ = io.WriteString(w, "data: chunk\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	upHost := strings.TrimPrefix(up.URL, "https://")

	sock := filepath.Join(t.TempDir(), "proxy.sock")
	sln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &egress.Proxy{RootCAs: up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	p.Grant("tok1", []string{upHost})
	if err := p.GrantCredential("tok1", &egress.Credential{Upstream: "https://" + upHost,
		Headers: map[string]string{"Authorization": "Bearer sk-real"}, BasePath: "/v1", Endpoints: []string{"POST /chat/completions"}}); err != nil {
		t.Fatal(err)
	}
	psrv := &http.Server{Handler: p}
	go func() { _ = psrv.Serve(sln) }()
	defer psrv.Close()

	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pln.Close()
	go func() {
		_ = serveProvider(pln, sock, &url.URL{Scheme: "http", User: url.UserPassword("tok1", "x"), Host: "127.0.0.1:3128"})
	}()

	req, _ := http.NewRequest("POST", "http://"+pln.Addr().String()+"/v1/chat/completions", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer sk-placeholder")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != strings.Repeat("data: chunk\n\n", 3) {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
	if gotAuth != "Bearer sk-real" || gotPath != "/v1/chat/completions" {
		t.Errorf("the provider saw Authorization %q at %q, want the proxy's credential at the run's path", gotAuth, gotPath)
	}
}

// TestRunProxyURL: the provider listener needs the run's token from its HTTPS_PROXY.
func TestRunProxyURL(t *testing.T) {
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		t.Setenv(k, "")
	}
	if _, err := runProxyURL(); err == nil {
		t.Error("no proxy variable: want an error")
	}
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
	if _, err := runProxyURL(); err == nil {
		t.Error("a proxy URL without a token: want an error")
	}
	t.Setenv("HTTPS_PROXY", "http://abc:x@127.0.0.1:3128")
	if u, err := runProxyURL(); err != nil || u.User.Username() != "abc" {
		t.Errorf("got %v, %v", u, err)
	}
}
