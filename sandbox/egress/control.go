package egress

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Message is one line of the control protocol, JSON on a line of its own. The server writes
// grant and revoke to the proxy's stdin; the proxy answers each on its stdout (granted, revoked,
// or error with the same token) and announces itself once with ready.
type Message struct {
	Op    string   `json:"op"` // ready, grant, granted, settle, settled, revoke, revoked, error
	Token string   `json:"token,omitempty"`
	Allow []string `json:"allow,omitempty"` // grant
	Addr  string   `json:"addr,omitempty"`  // ready: where the proxy listens
	// Features are what this proxy can do beyond allow-lists (ready): FeatureCredential,
	// FeatureCredentialPolicy.
	Features []string `json:"features,omitempty"`
	// Credential (grant) is added by the proxy to the run's provider requests (ProviderHost).
	// It is never echoed, logged or reported.
	Credential *Credential `json:"credential,omitempty"`
	Summary    *Summary    `json:"summary,omitempty"` // settled, revoked
	Error      string      `json:"error,omitempty"`
}

// Control serves the control protocol for p: it writes ready (addr) to w, then answers every
// message read from r until r ends (the server went away: the caller should exit). Invalid lines
// are answered with an error message.
func (p *Proxy) Control(r io.Reader, w io.Writer, addr string) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(Message{Op: "ready", Addr: addr, Features: []string{FeatureCredential, FeatureCredentialPolicy, FeatureSettle}}); err != nil {
		return fmt.Errorf("egress control: %w", err)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m Message
		var out Message
		switch err := json.Unmarshal(sc.Bytes(), &m); {
		case err != nil:
			out = Message{Op: "error", Error: "invalid control line: " + err.Error()}
		case m.Op == "grant" && m.Token != "":
			allow, err := parseAll(m.Allow)
			if err != nil {
				out = Message{Op: "error", Token: m.Token, Error: err.Error()}
				break
			}
			p.Grant(m.Token, allow)
			out = Message{Op: "granted", Token: m.Token}
			if m.Credential != nil {
				if err := p.GrantCredential(m.Token, m.Credential); err != nil {
					p.Revoke(m.Token)
					out = Message{Op: "error", Token: m.Token, Error: err.Error()}
				}
			}
		case m.Op == "settle" && m.Token != "":
			if s, err := p.Settle(m.Token, m.Credential); err != nil {
				out = Message{Op: "error", Token: m.Token, Error: err.Error()}
			} else {
				out = Message{Op: "settled", Token: m.Token, Summary: &s}
			}
		case m.Op == "revoke" && m.Token != "":
			s := p.Revoke(m.Token)
			out = Message{Op: "revoked", Token: m.Token, Summary: &s}
		default:
			out = Message{Op: "error", Token: m.Token, Error: fmt.Sprintf("unknown control message %q", m.Op)}
		}
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("egress control: %w", err)
		}
	}
	return sc.Err()
}

func parseAll(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, s := range in {
		e, err := ParseEndpoint(s)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// ErrClosed is returned by Client calls after the proxy's output ended.
var ErrClosed = errors.New("egress proxy: control stream closed")

// Client is the server's end of the control protocol. It is safe for concurrent use; every call
// waits for the proxy's answer to its own token.
type Client struct {
	w   io.Writer
	wmu sync.Mutex // serialises writes
	mu  sync.Mutex // guards the fields below

	waiting  map[string]chan Message // by op + token
	features []string                // announced in ready
	ready    chan Message
	done     chan struct{}
	err      error
}

// NewClient reads the proxy's messages from r (until it ends) and writes requests to w.
func NewClient(r io.Reader, w io.Writer) *Client {
	c := &Client{w: w, waiting: map[string]chan Message{}, ready: make(chan Message, 1), done: make(chan struct{})}
	go c.read(r)
	return c
}

func (c *Client) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var m Message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue // the proxy's stdout carries only protocol lines; skip anything else
		}
		if m.Op == "ready" {
			select {
			case c.ready <- m:
			default:
			}
			continue
		}
		c.mu.Lock()
		for _, op := range []string{"granted", "settled", "revoked"} {
			if m.Op == "error" || m.Op == op {
				if ch, ok := c.waiting[op+"/"+m.Token]; ok {
					delete(c.waiting, op+"/"+m.Token)
					ch <- m
				}
			}
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.err = sc.Err()
	close(c.done)
	c.mu.Unlock()
}

// Done is closed when the proxy's output ended (the proxy exited).
func (c *Client) Done() <-chan struct{} { return c.done }

// Ready waits for the proxy's ready message and returns the address it listens on.
func (c *Client) Ready(ctx context.Context) (string, error) {
	select {
	case m := <-c.ready:
		c.mu.Lock()
		c.features = m.Features
		c.mu.Unlock()
		return m.Addr, nil
	case <-c.done:
		return "", ErrClosed
	case <-ctx.Done():
		return "", fmt.Errorf("egress proxy ready: %w", ctx.Err())
	}
}

// Grant lets the run with token reach allow and waits until the proxy confirmed it. A non-nil
// cred is kept by the proxy for the run's provider requests (ProviderHost); a proxy that does
// not announce FeatureCredentialPolicy (it would lend the credential to any path of the
// upstream) is refused such a grant before anything is sent.
func (c *Client) Grant(ctx context.Context, token string, allow []string, cred *Credential) error {
	if cred != nil && !c.Has(FeatureCredentialPolicy) {
		return fmt.Errorf("egress grant: this proxy cannot keep a credential (its image is older than this server)")
	}
	_, err := c.call(ctx, "granted", Message{Op: "grant", Token: token, Allow: allow, Credential: cred})
	return err
}

// Has reports whether the proxy announced feature in its ready message.
func (c *Client) Has(feature string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.features, feature)
}

// Settle returns what the run did since its grant or last settle and counts anew; cred is the
// credential its provider requests get from now on (nil: none). A proxy that does not announce
// FeatureSettle is refused before anything is sent.
func (c *Client) Settle(ctx context.Context, token string, cred *Credential) (Summary, error) {
	if !c.Has(FeatureSettle) {
		return Summary{}, fmt.Errorf("egress settle: this proxy cannot settle a run (its image is older than this server)")
	}
	m, err := c.call(ctx, "settled", Message{Op: "settle", Token: token, Credential: cred})
	if err != nil || m.Summary == nil {
		return Summary{}, err
	}
	return *m.Summary, nil
}

// Revoke ends the run's grant and returns what it did.
func (c *Client) Revoke(ctx context.Context, token string) (Summary, error) {
	m, err := c.call(ctx, "revoked", Message{Op: "revoke", Token: token})
	if err != nil || m.Summary == nil {
		return Summary{}, err
	}
	return *m.Summary, nil
}

func (c *Client) call(ctx context.Context, answer string, m Message) (Message, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return Message{}, err
	}
	ch := make(chan Message, 1)
	key := answer + "/" + m.Token
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return Message{}, ErrClosed
	default:
	}
	c.waiting[key] = ch
	c.mu.Unlock()
	c.wmu.Lock()
	_, err = c.w.Write(append(b, '\n'))
	c.wmu.Unlock()
	if err != nil {
		c.forget(key)
		return Message{}, fmt.Errorf("egress %s %s: %w", m.Op, m.Token, err)
	}
	select {
	case r := <-ch:
		if r.Op == "error" {
			return Message{}, fmt.Errorf("egress %s: %s", m.Op, r.Error)
		}
		return r, nil
	case <-c.done:
		c.forget(key)
		return Message{}, ErrClosed
	case <-ctx.Done():
		c.forget(key)
		return Message{}, fmt.Errorf("egress %s: %w", m.Op, ctx.Err())
	}
}

func (c *Client) forget(key string) {
	c.mu.Lock()
	delete(c.waiting, key)
	c.mu.Unlock()
}
