package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// NewClient builds the engine client of an Endpoint: plain or TLS over unix/tcp, or the docker
// CLI's ssh transport (`ssh … docker system dial-stdio`) for ssh:// hosts. DOCKER_API_VERSION
// still pins the API version, as before; otherwise it is negotiated on first use.
func NewClient(ep Endpoint) (*client.Client, error) {
	u, err := url.Parse(ep.Host)
	if err != nil {
		return nil, fmt.Errorf("docker host %q: %w", ep.Host, err)
	}
	opts := []client.Opt{client.WithAPIVersionFromEnv()}
	switch u.Scheme {
	case "ssh":
		dial, err := sshDialer(u)
		if err != nil {
			return nil, fmt.Errorf("docker host %q: %w", ep.Host, err)
		}
		// The host name only fills the HTTP requests; every connection is a dial-stdio process.
		opts = append(opts, client.WithHost("http://docker.example.com"), client.WithDialContext(dial))
	default:
		if ep.TLS != nil {
			cfg, err := ep.TLS.config()
			if err != nil {
				return nil, fmt.Errorf("docker host %q: %w", ep.Host, err)
			}
			tr := &http.Transport{TLSClientConfig: cfg, MaxIdleConns: 6, IdleConnTimeout: 30 * time.Second}
			opts = append(opts, client.WithHTTPClient(&http.Client{Transport: tr, CheckRedirect: client.CheckRedirect}))
		}
		opts = append(opts, client.WithHost(ep.Host))
	}
	return client.New(opts...)
}

// config is the tls.Config of the files: the CA (else the system roots) verifies the server
// unless Verify is off, and cert+key are the client certificate when both are given.
func (f *TLSFiles) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !f.Verify} //nolint:gosec // the user's DOCKER_TLS_VERIFY / SkipTLSVerify
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca %s: no certificate found", f.CA)
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.Cert != "" && f.Key != "":
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case f.Cert != "" || f.Key != "":
		return nil, errors.New("tls client certificate: cert.pem and key.pem must both exist")
	}
	return cfg, nil
}

// sshDialer connects through `ssh [-l user] [-p port] -- host docker [--host unix://path]
// system dial-stdio`, like the docker CLI's ssh connection helper: the remote docker CLI relays
// the engine's socket over the ssh session. ssh must be on PATH and log in without a prompt
// (keys or an agent); ssh's own config applies.
func sshDialer(u *url.URL) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	if u.Hostname() == "" {
		return nil, errors.New("ssh: no host")
	}
	args := []string{"-o", "ConnectTimeout=30", "-T"}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return nil, errors.New("ssh: a password in the URL is not supported; use keys or an agent")
		}
		args = append(args, "-l", u.User.Username())
	}
	if p := u.Port(); p != "" {
		args = append(args, "-p", p)
	}
	args = append(args, "--", u.Hostname(), "docker")
	if u.Path != "" && u.Path != "/" {
		args = append(args, "--host", "unix://"+u.Path)
	}
	args = append(args, "system", "dial-stdio")
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialCommand(ctx, "ssh", args)
	}, nil
}

// dialCommand starts name with args and speaks through its stdin/stdout. The process belongs
// to the connection: Close ends it. ctx bounds only the start.
func dialCommand(ctx context.Context, name string, args []string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &cmdConn{cmd: cmd, stdin: stdin, stdout: stdout}
	cmd.Stderr = &c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return c, nil
}

// cmdConn is a net.Conn over a child's stdin and stdout. Deadlines are not supported (the HTTP
// transport does not need them); reads end when the child exits.
type cmdConn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr limitedBuffer

	once sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if errors.Is(err, io.EOF) {
		if msg := c.stderr.String(); msg != "" {
			return n, fmt.Errorf("%s: %s: %w", c.cmd.Path, msg, io.ErrUnexpectedEOF)
		}
	}
	return n, err
}

func (c *cmdConn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close ends the child and reaps it; it is idempotent.
func (c *cmdConn) Close() error {
	c.once.Do(func() {
		_ = c.stdin.Close()
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr              { return cmdAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr             { return cmdAddr{} }
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }
func (cmdAddr) Network() string                     { return "cmd" }
func (cmdAddr) String() string                      { return "dial-stdio" }

type cmdAddr struct{}

// limitedBuffer keeps the first 4 KiB written to it (a child's error message); it is safe for
// the writer goroutine and a reader at once.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 4096 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.TrimSpace(b.buf.Bytes()))
}
