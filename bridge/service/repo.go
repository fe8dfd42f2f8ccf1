package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sgit "github.com/cline-mcp/cline-mcp/sandbox/git"
)

// Repository is what a remote call names instead of a cwd: a repository by URL and commit,
// fetched into the service's cache with the tenant's read credential, or sent as a git bundle
// that holds the commit.
type Repository struct {
	URL    string `json:"url,omitempty"`
	Commit string `json:"commit"`
	Bundle string `json:"bundle,omitempty"` // base64 of a git bundle
	// Snapshot (with a bundle only) is a commit of the bundle whose tree becomes the checkout's
	// uncommitted changes on top of Commit: the caller's work that is not committed.
	Snapshot string `json:"snapshot,omitempty"`
}

// Repos is the service's cache of repositories: per tenant, a bare mirror per URL (fetched
// commit by commit, kept between calls) and a checkout per call (removed when the call ends).
// Safe for concurrent use; set the fields before the first call.
type Repos struct {
	// Dir holds the cache: <Dir>/<tenant>/mirrors and <Dir>/<tenant>/checkouts.
	Dir string
	// MaxBundle bounds a sent bundle (decoded bytes); 0 means 50 MiB.
	MaxBundle int64
	// MaxFetch bounds what one fetch may add to a mirror; 0 means 1 GiB.
	MaxFetch int64
	// FetchTimeout bounds one fetch; 0 means 5 minutes.
	FetchTimeout time.Duration
	// AllowLoopbackHTTP lets a URL use http:// or git:// when its host is a loopback address
	// (tests serve repositories there); otherwise only https:// is fetched.
	AllowLoopbackHTTP bool
	// Hosts, when not empty, are the only hosts a URL may name (case-insensitive, without
	// port): the tenant's read token goes to no other host, nor does any fetch.
	Hosts []string
	// Git runs git; the zero value runs git from PATH.
	Git sgit.Git

	fetches atomic.Int64
	locks   sync.Map // mirror dir → *sync.Mutex
	slots   sync.Map // tenant name → chan struct{}: its Prepare calls at once
}

// Fetches counts the fetches from remote URLs so far (a cached commit needs none).
func (r *Repos) Fetches() int64 { return r.fetches.Load() }

// DefaultMaxBundle is the size limit of a sent bundle when MaxBundle is 0.
const DefaultMaxBundle = 50 << 20

func (r *Repos) maxBundle() int64 {
	if r.MaxBundle > 0 {
		return r.MaxBundle
	}
	return DefaultMaxBundle
}

// Checkout is a call's own clone of a repository at the commit it named. Remove deletes it
// (once; later calls do nothing).
type Checkout struct {
	Dir   string
	once  sync.Once
	taken atomic.Bool // a run works in it and removes it when it ends
}

// Remove deletes the checkout.
func (c *Checkout) Remove() {
	c.once.Do(func() { _ = os.RemoveAll(filepath.Dir(c.Dir)) })
}

// Check validates spec before any git runs: either a URL (https, no credentials in it, no
// transport helper) or a bundle within the size limit, and always a full lowercase commit id.
func (r *Repos) Check(spec Repository) error {
	if !sgit.IsObjectID(spec.Commit) {
		return errors.New("repository.commit must be a full commit id (40 or 64 lowercase hex digits)")
	}
	if spec.Snapshot != "" && (!sgit.IsObjectID(spec.Snapshot) || spec.Bundle == "") {
		return errors.New("repository.snapshot must be a full commit id, and comes only with a bundle")
	}
	switch {
	case spec.URL != "" && spec.Bundle != "":
		return errors.New("repository takes either url or bundle, not both")
	case spec.URL != "":
		_, err := r.checkURL(spec.URL)
		return err
	case spec.Bundle != "":
		if limit := base64.StdEncoding.EncodedLen(int(r.maxBundle())); len(spec.Bundle) > limit {
			return fmt.Errorf("repository.bundle is larger than this service's limit of %d bytes", r.maxBundle())
		}
		return nil
	}
	return errors.New("repository needs url or bundle")
}

// checkURL accepts https://host/path (and, with AllowLoopbackHTTP, http:// or git:// on a
// loopback host) without user info, query or fragment, and returns the protocol git needs.
func (r *Repos) checkURL(raw string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("repository.url is refused: %s", why)
	}
	if len(raw) > 2048 || strings.ContainsFunc(raw, func(c rune) bool { return c <= ' ' || c == 0x7f || c == '\\' || c > 0x7e }) ||
		strings.HasPrefix(raw, "-") {
		return bad("it is too long, holds a space, a control or non-ASCII character or a backslash, or starts with a dash")
	}
	if strings.Contains(raw, "::") {
		return bad("transport helpers (<transport>::<address>, such as ext::) are not fetched")
	}
	u, err := url.Parse(raw)
	if err == nil && u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "git" {
		return bad("only https:// URLs are fetched (not " + u.Scheme + "://)")
	}
	if err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" {
		return bad("it must be an absolute https://host/path URL")
	}
	if u.User != nil {
		return bad("credentials in the URL are not accepted (the tenant's read token is configured on the service)")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return bad("it must not have a query or fragment")
	}
	if len(r.Hosts) > 0 && !slices.ContainsFunc(r.Hosts, func(h string) bool { return strings.EqualFold(h, u.Hostname()) }) {
		return bad("host " + u.Hostname() + " is not among the hosts this service fetches from")
	}
	switch u.Scheme {
	case "https":
		return "https", nil
	case "http", "git":
		if ip := net.ParseIP(u.Hostname()); r.AllowLoopbackHTTP && ip != nil && ip.IsLoopback() {
			return u.Scheme, nil
		}
	}
	return bad("only https:// URLs are fetched (not " + u.Scheme + "://)")
}

// Prepare makes a checkout of spec for tenant t: the commit fetched into (or found in) the
// tenant's mirror of the URL, or taken from the bundle, then cloned into a new directory.
func (r *Repos) Prepare(ctx context.Context, t Tenant, spec Repository) (*Checkout, error) {
	if err := r.Check(spec); err != nil {
		return nil, err
	}
	// A tenant prepares as many repositories at once as it may run calls: the fetches come
	// before the Runner's admission.
	slot, _ := r.slots.LoadOrStore(t.Name, make(chan struct{}, max(1, t.Limits.MaxConcurrent)))
	select {
	case slot.(chan struct{}) <- struct{}{}:
		defer func() { <-slot.(chan struct{}) }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	base := filepath.Join(r.Dir, t.Name)
	if spec.URL != "" {
		src, unlock, err := r.mirror(ctx, t, base, spec)
		if err != nil {
			return nil, err
		}
		defer unlock() // the mirror changes only between checkouts
		return r.checkout(ctx, base, src, spec.Commit, "")
	}
	src, cleanup, err := r.unbundle(ctx, base, spec)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	return r.checkout(ctx, base, src, spec.Commit, spec.Snapshot)
}

// noConfig keeps the user's and the system's git config (helpers, filters, rewrites) away.
var noConfig = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS="}

// safeFetch are the options of every fetch: no credential helper, no redirects (the header
// would follow them), objects checked, no submodules, no tags.
var safeFetch = []string{"-c", "credential.helper=", "-c", "http.followRedirects=false", "-c", "transfer.fsckObjects=true",
	"-c", "fetch.recurseSubmodules=false", "-c", "submodule.recurse=false", "-c", "core.askPass="}

// mirror returns the tenant's bare mirror of spec.URL holding spec.Commit, fetching exactly
// that commit unless it is already there, and locked until unlock is called.
func (r *Repos) mirror(ctx context.Context, t Tenant, base string, spec Repository) (dir string, unlock func(), err error) {
	proto, err := r.checkURL(spec.URL)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256([]byte(spec.URL))
	dir = filepath.Join(base, "mirrors", hex.EncodeToString(sum[:16])+".git")
	v, _ := r.locks.LoadOrStore(dir, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	if err := r.fetchInto(ctx, t, dir, proto, spec); err != nil {
		mu.Unlock()
		return "", nil, err
	}
	return dir, mu.Unlock, nil
}

// fetchInto fetches spec.Commit into the mirror at dir unless it is there. A fetch that fails
// or grows past the limits removes the mirror: what it left must not serve a later call.
func (r *Repos) fetchInto(ctx context.Context, t Tenant, dir, proto string, spec Repository) error {
	if err := r.initBare(ctx, dir); err != nil {
		return err
	}
	if r.has(ctx, dir, spec.Commit) {
		return nil
	}
	r.fetches.Add(1)
	env := append(append([]string{}, noConfig...), "GIT_ALLOW_PROTOCOL="+proto)
	token := t.GitReadToken.reveal()
	if token != "" {
		// The credential travels in the environment, never on a command line or in a file.
		cred := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic "+cred)
	}
	args := append(append([]string{}, safeFetch...), "-c", "protocol.allow=never", "-c", "protocol."+proto+".allow=always",
		"fetch", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--", spec.URL, spec.Commit+":refs/cline-mcp/"+spec.Commit)
	if err := r.bounded(ctx, dir, env, args); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("fetching commit %s of %s: %s", spec.Commit, spec.URL, scrub(gitMessage(err), token))
	}
	if !r.has(ctx, dir, spec.Commit) {
		return fmt.Errorf("%s did not send commit %s", spec.URL, spec.Commit)
	}
	return nil
}

// bounded runs a fetch into dir within FetchTimeout, stopped when the directory grows past
// MaxFetch.
func (r *Repos) bounded(ctx context.Context, dir string, env, args []string) error {
	return r.boundedBy(ctx, dir, r.maxFetch(), sgit.Opts{Dir: dir, Env: env}, args)
}

func (r *Repos) maxFetch() int64 {
	if r.MaxFetch > 0 {
		return r.MaxFetch
	}
	return 1 << 30
}

// boundedBy runs git within FetchTimeout, stopped when dir grows by more than limit bytes.
func (r *Repos) boundedBy(ctx context.Context, dir string, limit int64, o sgit.Opts, args []string) error {
	timeout := r.FetchTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := dirSize(dir)
	var over atomic.Bool
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if dirSize(dir)-start > limit {
					over.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	_, err := r.Git.Run(ctx, o, args...)
	if over.Load() || dirSize(dir)-start > limit { // also when git was faster than the watch
		return fmt.Errorf("stopped: it grew past %d bytes", limit)
	}
	return err
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// scrub removes secret from s (git may echo a header in an error).
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	s = strings.ReplaceAll(s, secret, "[redacted]")
	return strings.ReplaceAll(s, base64.StdEncoding.EncodeToString([]byte("x-access-token:"+secret)), "[redacted]")
}

func (r *Repos) initBare(ctx context.Context, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	tmp := dir + ".new-" + randomName()
	if _, err := r.Git.Run(ctx, sgit.Opts{Env: noConfig}, "init", "--bare", "--quiet", "--template=", "--", tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	return os.Rename(tmp, dir)
}

// has reports whether the repository at dir holds commit.
func (r *Repos) has(ctx context.Context, dir, commit string) bool {
	_, err := r.Git.Run(ctx, sgit.Opts{Dir: dir, Env: noConfig}, "cat-file", "-e", "--end-of-options", commit+"^{commit}")
	return err == nil
}

func randomName() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
