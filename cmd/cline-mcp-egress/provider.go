package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// serveProvider is the forwarder's provider listener (`forward -provider addr`): the run's
// settings name http://<addr>/<base path> as its provider's baseUrl, and every request the run
// sends there goes to the proxy's unix socket as an absolute-form request for
// egress.ProviderHost with the run's token, where the proxy adds the credential the run never
// had and forwards it to the provider. Answers stream back as they arrive (SSE).
func serveProvider(ln net.Listener, socket string, proxyURL *url.URL) error {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *pr.In.URL
			u.Scheme, u.Host, u.User = "http", egress.ProviderHost, nil
			pr.Out.URL = &u
			pr.Out.Host = egress.ProviderHost
		},
		Transport: &http.Transport{
			Proxy: http.ProxyURL(proxyURL),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			},
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "cline-mcp egress forwarder: "+err.Error(), http.StatusBadGateway)
		},
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second}
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// runProxyURL is the proxy URL of the run (its HTTPS_PROXY, which carries the run's token as
// its user name), for the provider listener.
func runProxyURL() (*url.URL, error) {
	for _, name := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if v := os.Getenv(name); v != "" {
			u, err := url.Parse(v)
			if err != nil || u.User == nil || u.User.Username() == "" {
				return nil, fmt.Errorf("%s holds no run token", name)
			}
			return u, nil
		}
	}
	return nil, errors.New("no HTTPS_PROXY with the run's token in the environment")
}
