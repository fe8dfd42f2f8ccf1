package egress

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
)

// keyWorld is a TLS upstream that logs every request it receives (method, raw target and the
// credential header) and a proxy that lends it the key sk-real-… for POST /v1/chat/completions.
type keyWorld struct {
	p     *Proxy
	proxy string // the proxy's address
	key   string
	cred  *Credential // what the run was granted
	mu    sync.Mutex
	log   []string
}

const testKey = "sk-real-0123456789abcdef"

func newKeyWorld(t *testing.T, handler http.HandlerFunc, a Allowance) *keyWorld {
	t.Helper()
	w := &keyWorld{key: testKey}
	up := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.log = append(w.log, r.Method+" "+r.RequestURI+" auth="+r.Header.Get("Authorization")+" ae="+r.Header.Get("Accept-Encoding"))
		w.mu.Unlock()
		if handler != nil {
			handler(rw, r)
			return
		}
		fmt.Fprint(rw, `{"ok":true}`)
	}))
	t.Cleanup(up.Close)
	upHost := hostport(t, up.URL)
	w.p = &Proxy{RootCAs: rootsOf(up)}
	w.p.Grant("run", []string{upHost})
	w.cred = &Credential{Upstream: "https://" + upHost,
		Headers:  map[string]string{"Authorization": "Bearer " + w.key, "X-Team-Secret": "team-secret-value"},
		BasePath: "/v1", Endpoints: []string{"POST /chat/completions"}, Allowance: a}
	if err := w.p.GrantCredential("run", w.cred); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.p)
	t.Cleanup(srv.Close)
	w.proxy = hostport(t, srv.URL)
	return w
}

// send writes one request to the proxy exactly as given (method and request target unparsed, as
// a hostile run can) with the run's token and returns the answer's status, headers and body.
func (w *keyWorld) send(t *testing.T, method, path string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	c, err := net.Dial("tcp", w.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tok := base64.StdEncoding.EncodeToString([]byte("run:x"))
	req := fmt.Sprintf("%s http://%s%s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\nAuthorization: Bearer sk-placeholder\r\nContent-Length: 2\r\nConnection: close\r\n",
		method, ProviderHost, path, ProviderHost, tok)
	for _, h := range hdr {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n{}"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

func (w *keyWorld) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log...)
}

// hostileRequests are what a run could ask of its provider's origin with the lent key: another
// API of a gateway (key management), the same path in spellings that normalise elsewhere, and
// methods the run does not need.
var hostileRequests = [][2]string{
	{"GET", "/admin/keys"}, {"POST", "/key/generate"}, {"POST", "/v1/../admin"}, {"POST", "/v1/%2e%2e/admin"},
	{"POST", "/v1/%2E%2E/admin"}, {"POST", "//admin"}, {"TRACE", "/v1/chat/completions"},
	{"DELETE", "/v1/files/file-abc"}, {"GET", "/v1/files"}, {"GET", "/v1/chat/completions"},
	{"PUT", "/v1/chat/completions"}, {"OPTIONS", "/v1/chat/completions"}, {"HEAD", "/v1/chat/completions"},
	{"POST", "/v1/chat/completions/../../admin"}, {"POST", "/v1/chat%2fcompletions"}, {"POST", "/v1/chat%2Fcompletions"},
	{"POST", "/v1%5cchat/completions"}, {"POST", "/v1\\chat/completions"}, {"POST", "/v1//chat/completions"},
	{"POST", "/v1/./chat/completions"}, {"POST", "/v1/chat/completions/"}, {"POST", "/v1/chat/completions/x"},
	{"POST", "/v1/%63hat/completions"}, {"POST", "/V1/chat/completions"}, {"POST", "/v1/chat/completions;x"},
	{"POST", "/v1"}, {"POST", "/"}, {"POST", "/v1/messages"},
}

// TestCredentialLentOnlyToTheAPI: with the key at the proxy, the run's one API request (the
// marker: it must reach the upstream with the real key) goes through; every hostile method and
// path is refused with 403 saying the policy denied it and not to retry, never reaches the
// upstream, and is counted with its method and path in the run's refusals.
func TestCredentialLentOnlyToTheAPI(t *testing.T) {
	w := newKeyWorld(t, nil, Allowance{})
	if code, _, _ := w.send(t, "POST", "/v1/chat/completions?x=1"); code != 200 {
		t.Fatalf("the run's API request got %d, want 200", code)
	}
	if got := w.seen(); len(got) != 1 || got[0] != "POST /v1/chat/completions?x=1 auth=Bearer "+testKey+" ae=identity" {
		t.Fatalf("the upstream saw %q, want the API request with the real key", got)
	}
	for _, h := range hostileRequests {
		code, _, body := w.send(t, h[0], h[1])
		if code != http.StatusForbidden || (h[0] != "HEAD" && !strings.Contains(body, PolicyDenied)) {
			t.Errorf("%s %s: got %d %q, want 403 with the policy's refusal", h[0], h[1], code, body)
		}
	}
	if got := w.seen(); len(got) != 1 {
		t.Errorf("hostile requests reached the upstream: %q", got[1:])
	}
	refused := 0
	sum := w.p.Revoke("run")
	if len(sum.Refused) != 1 || !strings.HasPrefix(sum.Refused[0].Reason, "GET /admin/keys, POST /key/generate, POST /v1/../admin, POST /v1/%2e%2e/admin and others: ") {
		t.Errorf("refusals %+v, want one count naming the first four requests", sum.Refused)
	}
	for _, c := range sum.Refused {
		if !strings.Contains(c.Reason, PolicyDenied) || c.Budget {
			t.Errorf("refusal %+v", c)
		}
		refused += c.Count
	}
	if refused != len(hostileRequests) {
		t.Errorf("counted %d refusals, want %d", refused, len(hostileRequests))
	}
}

// TestAnswersNeverCarryTheKey: an upstream that reflects the request (an echo or debug route, an
// error page dumping headers) gives the run back neither the key nor the custom header's value:
// in headers or body, whatever the upstream's chunking, without a stale Content-Length. The
// upstream is asked for an unencoded answer; one that comes encoded anyway is refused.
func TestAnswersNeverCarryTheKey(t *testing.T) {
	w := newKeyWorld(t, func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gzip") != "" {
			rw.Header().Set("Content-Encoding", "gzip")
			fmt.Fprint(rw, "\x1f\x8b compressed "+r.Header.Get("Authorization"))
			return
		}
		dump := fmt.Sprintf("you sent Authorization: %s and X-Team-Secret: %s", r.Header.Get("Authorization"), r.Header.Get("X-Team-Secret"))
		rw.Header().Set("X-Echo", r.Header.Get("Authorization"))
		rw.Header().Set("Content-Length", fmt.Sprint(len(dump)))
		fl := rw.(http.Flusher)
		for i := range dump { // one byte per chunk: every split of the key
			_, _ = io.WriteString(rw, dump[i:i+1])
			fl.Flush()
		}
	}, Allowance{})
	code, hdr, body := w.send(t, "POST", "/v1/chat/completions")
	if code != 200 || !strings.Contains(body, "you sent Authorization: "+Scrubbed) || !strings.Contains(body, "X-Team-Secret: "+Scrubbed) {
		t.Errorf("got %d %q, want the reflected answer with the secrets removed", code, body)
	}
	if strings.Contains(body+fmt.Sprint(hdr), testKey) || strings.Contains(body+fmt.Sprint(hdr), "team-secret-value") {
		t.Errorf("the answer carries a secret: %v %q", hdr, body)
	}
	if hdr.Get("Content-Length") != "" && hdr.Get("Content-Length") != fmt.Sprint(len(body)) {
		t.Errorf("Content-Length %s for %d bytes", hdr.Get("Content-Length"), len(body))
	}
	code, _, body = w.send(t, "POST", "/v1/chat/completions?gzip=1")
	if code != http.StatusBadGateway || strings.Contains(body, testKey) {
		t.Errorf("an encoded answer: got %d %q, want 502 without the key", code, body)
	}
	if _, _, body = w.send(t, "TRACE", "/v1/chat/completions"); strings.Contains(body, testKey) {
		t.Errorf("TRACE gave the key back: %q", body)
	}
	// A protocol switch (its bytes would bypass the scrubber) never reaches the upstream as one.
	code, _, body = w.send(t, "POST", "/v1/chat/completions?upgrade=1", "Connection: Upgrade", "Upgrade: websocket")
	if code == http.StatusSwitchingProtocols || strings.Contains(body, testKey) {
		t.Errorf("an upgrade: got %d %q", code, body)
	}
	if got := w.seen(); !strings.Contains(got[len(got)-1], "upgrade=1") {
		t.Errorf("the upgrade request did not reach the upstream as a plain request: %q", got)
	}
}

// FuzzCleanPath: a path the policy accepts means what it says — it normalises to itself, holds
// nothing a server decodes, and no segment is a dot or empty.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/v1/chat/completions", "/v1/../admin", "/v1/%2e%2e/x", "//a", "/a\\b", "/a/./b", "/a/", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if cleanPath(p) != nil {
			return
		}
		if path.Clean(p) != p || strings.ContainsAny(p, "%\\?#; ") || strings.Contains(p, "//") {
			t.Errorf("accepted %q", p)
		}
		for _, seg := range strings.Split(p, "/")[1:] {
			if seg == "" || seg == "." || seg == ".." {
				t.Errorf("accepted %q", p)
			}
		}
	})
}

// TestScrubEveryChunkSplit: the scrubber removes every secret whatever the reads that carry it,
// for every split of the body into two reads and for one byte per read, and releases everything
// that cannot start a secret at once.
func TestScrubEveryChunkSplit(t *testing.T) {
	secrets := secretsOf(http.Header{"Authorization": {"Bearer " + testKey}, "X-Team": {"team-secret-value"}, "X-Short": {"a"}})
	body := "data: {\"echo\":\"Bearer " + testKey + "\"}\n\nsk-real-0 partial " + testKey + testKey + " team-secret-value!"
	want := "data: {\"echo\":\"" + Scrubbed + "\"}\n\nsk-real-0 partial " + Scrubbed + Scrubbed + " " + Scrubbed + "!"
	for i := 0; i <= len(body); i++ {
		for _, chunks := range [][]string{{body[:i], body[i:]}, {body[:i/2], body[i/2 : i], body[i:]}} {
			got, err := io.ReadAll(newScrubReader(io.NopCloser(&chunked{parts: append([]string(nil), chunks...)}), secrets))
			if err != nil || string(got) != want {
				t.Fatalf("split %q: got %q, want %q", chunks, got, want)
			}
		}
	}
	ones := make([]string, len(body))
	for i := range body {
		ones[i] = body[i : i+1]
	}
	if got, _ := io.ReadAll(newScrubReader(io.NopCloser(&chunked{parts: ones}), secrets)); string(got) != want {
		t.Errorf("one byte per read: got %q", got)
	}
	// An SSE event is released as soon as it is read: nothing of it can start a secret.
	s := newScrubReader(io.NopCloser(&chunked{parts: []string{"data: a\n\n", "data: b\n\n"}}), secrets)
	buf := make([]byte, 64)
	if n, _ := s.Read(buf); string(buf[:n]) != "data: a\n\n" {
		t.Errorf("the first event came as %q", buf[:n])
	}
}

// chunked returns its parts one per Read.
type chunked struct{ parts []string }

func (c *chunked) Read(p []byte) (int, error) {
	for len(c.parts) > 0 && c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	return n, nil
}
