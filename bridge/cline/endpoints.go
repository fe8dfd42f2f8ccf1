package cline

import (
	"encoding/json"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ProviderEndpoints returns the network endpoints ("host:port") a run of provider needs, from
// the provider's settings block of providers.json (settings: its "settings" object): the host of
// its baseUrl when set, else the provider's known API host (the catalog of PolicyCLIVersion),
// plus the hosts some providers need besides (token refresh, a region's endpoint). known is
// false when nothing is known about the provider's API: the caller then reports it, and the
// user names the endpoint with --egress-allow. Endpoints on loopback are dropped: from a
// container they are the container itself.
func ProviderEndpoints(provider string, settings json.RawMessage) (eps []string, known bool) {
	var s struct {
		BaseURL string `json:"baseUrl"`
		Region  string `json:"region"`
		AWS     struct {
			Region   string `json:"region"`
			Endpoint string `json:"endpoint"`
		} `json:"aws"`
		GCP struct {
			Region string `json:"region"`
		} `json:"gcp"`
		SAP struct {
			TokenURL string `json:"tokenUrl"`
		} `json:"sap"`
	}
	_ = json.Unmarshal(settings, &s)
	add := func(hostport string) {
		if hostport == "" || isLoopback(hostport) {
			return
		}
		for _, e := range eps {
			if e == hostport {
				return
			}
		}
		eps = append(eps, hostport)
	}
	known = true
	switch {
	case s.BaseURL != "":
		ep := urlEndpoint(s.BaseURL)
		known = ep != ""
		add(ep)
	case provider == "bedrock":
		region := first(s.AWS.Region, s.Region, "us-east-1")
		if s.AWS.Endpoint != "" {
			add(urlEndpoint(s.AWS.Endpoint))
		}
		add("bedrock-runtime." + region + ".amazonaws.com:443")
		add("bedrock." + region + ".amazonaws.com:443")
	case provider == "vertex":
		region := first(s.GCP.Region, s.Region, "us-central1")
		add(region + "-aiplatform.googleapis.com:443")
		add("aiplatform.googleapis.com:443")
		add("oauth2.googleapis.com:443")
	case providerHosts[provider] != "":
		add(providerHosts[provider])
	default:
		known = false
	}
	switch provider {
	case "cline":
		add("api.cline.bot:443") // its account API, whatever the baseUrl (the host refreshes the token before a container run)
	case "openai-codex":
		add("chatgpt.com:443")
		add("auth.openai.com:443")
	case "sapaicore":
		add(urlEndpoint(s.SAP.TokenURL))
	}
	return eps, known && len(eps) > 0
}

// TelemetryEndpoints are the hosts Cline 3.0.65 contacts on every run besides the provider
// (telemetry and feature flags; docs/cline-cli.md "Environment and network"). The egress proxy refuses them like any other host;
// the bridge does not report those refusals.
var TelemetryEndpoints = []string{"otel.cline.bot:443", "data.cline.bot:443"}

// urlEndpoint is the host:port of an http(s) URL, or "".
func urlEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https", "wss":
			port = "443"
		case "http", "ws":
			port = "80"
		default:
			return ""
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return ""
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
