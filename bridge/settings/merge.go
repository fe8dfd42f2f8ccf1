package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/afero"
)

// refreshFields are the only values MergeAllowed brings back from a container's settings copy:
// what the Cline CLI writes when it refreshes an OAuth token during a run. Its token manager
// (sdk/packages/core/src/runtime/orchestration/runtime-oauth-token-manager.ts in cline/cline)
// saves the result of saveOAuthCredentials (sdk/packages/core/src/auth/provider-auth-registry.ts):
// providers[id].settings.auth = {...auth, accessToken, refreshToken, accountId, expiresAt,
// metadata: {...metadata, ...new}}, with the block's updatedAt and tokenSource "oauth" and
// setLastUsed false. The metadata keys are those the refreshes of the cline, oca and openai-codex
// providers write (auth/cline.ts, auth/oca.ts, auth/codex.ts) minus "provider" and "mode", which
// pick where the next refresh goes and never change in a refresh. The README lists them.
var refreshFields = map[string]valueKind{
	"settings.auth.accessToken":                 kindString,
	"settings.auth.refreshToken":                kindString,
	"settings.auth.expiresAt":                   kindInt,
	"settings.auth.accountId":                   kindString,
	"settings.auth.metadata.tokenType":          kindString,
	"settings.auth.metadata.userInfo":           kindObject,
	"settings.auth.metadata.subject":            kindString,
	"settings.auth.metadata.idToken":            kindString,
	"settings.auth.metadata.sessionStartedAtMs": kindInt,
}

type valueKind int

const (
	kindString valueKind = iota
	kindInt
	kindObject
)

// maxRefreshValue bounds a merged string (tokens are a few KiB).
const maxRefreshValue = 64 << 10

func (k valueKind) accepts(v any) bool {
	switch k {
	case kindString:
		s, ok := v.(string)
		return ok && len(s) <= maxRefreshValue
	case kindInt:
		n, ok := v.(json.Number)
		i, err := n.Int64()
		return ok && err == nil && i > 0
	case kindObject:
		_, ok := v.(*object)
		return ok
	}
	return false
}

// MergeAllowed is the way back from a container's settings copy into the host file: it crosses the
// trust boundary with the pre-run copy (what PrivateCopy wrote) as the base and refreshFields as the
// allow-list. It keeps only refreshed OAuth credentials of providers that were in the copy before the
// run and already held an OAuth credential then; when the copy recorded an accountId, the new
// tokens must be for the same account. Everything else the container changed — baseUrl, apiKey,
// headers, a new provider, lastUsedProvider, any unknown field — is dropped with one warning that
// names the fields, never their values. The writes an honest run makes (lastUsedProvider and the
// target's model/reasoning for an override, updatedAt, a stub block for -P) are dropped silently,
// like the host restore does. A copy that is a symlink (or sits behind one), a FIFO or another
// non-regular file, bigger than 4 MiB or not a JSON object is ignored with a warning; nothing is
// ever read through a symlink in the copy. Changes made to the host file meanwhile are kept; where
// both sides changed the same credential, the copy's (newer) value wins. Nothing merged → no
// write. The caller holds the write lock for the duration. It returns warnings, never an error.
func (s *Store) MergeAllowed(c *Copy) []string {
	if c == nil {
		return nil
	}
	data, err := c.read()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // nothing to merge; deletions are never merged
	case err != nil:
		return []string{fmt.Sprintf("settings: the container's settings copy was ignored (%v); nothing merged back into %s", errText(err), s.Path)}
	}
	cp, err := parseObject(data)
	if err != nil {
		return []string{fmt.Sprintf("settings: the container left an unusable settings copy (%v); nothing merged back into %s", err, s.Path)}
	}
	snap := newObject()
	if c.existed {
		if snap, err = parseObject(c.snapshot); err != nil {
			return []string{fmt.Sprintf("settings: the private copy made for the container is not usable (%v); nothing merged back", err)}
		}
	}
	m := &merger{target: c.Target}
	m.diffTop(snap, cp)

	var warns []string
	if lost := lostProviders(snap, cp); len(lost) > 0 {
		warns = append(warns, fmt.Sprintf("settings: Cline dropped provider(s) %s from its private copy during the run (one entry probably fails its schema); %s keeps them", strings.Join(lost, ", "), s.Path))
	}
	if len(m.dropped) > 0 {
		warns = append(warns, fmt.Sprintf("settings: the run changed %s in its private settings copy; only refreshed OAuth credentials are merged back into %s, so these were dropped",
			strings.Join(firstN(m.dropped, 10), ", "), s.Path))
	}
	if len(m.merges) == 0 {
		return warns
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	host := newObject()
	hostData, err := s.readFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return warns // the providers it would refresh are gone
	case err != nil:
		return append(warns, fmt.Sprintf("settings: cannot read %s (%v); nothing merged back from the container", s.Path, errText(err)))
	default:
		if host, err = parseObject(hostData); err != nil {
			return append(warns, fmt.Sprintf("settings: %s is not usable (%v); nothing merged back from the container, the file was left untouched", s.Path, err))
		}
	}
	if !m.apply(host) {
		return warns
	}
	if err := s.writeAtomic(s.Path, host.encode()); err != nil {
		warns = append(warns, fmt.Sprintf("settings: could not write %s (%v); credentials refreshed inside the container were not kept", s.Path, errText(err)))
	}
	return warns
}

// merger sorts the container's changes into allowed merges and dropped field names.
type merger struct {
	target  string
	merges  []merge
	dropped []string
}

// merge is one allowed value for providers[id] at path (dotted, below the block).
type merge struct {
	id, path string
	val      any
	order    []string // key order of the object it came from
}

// drop records a field the merge leaves out. Names come from the container's file, so odd ones
// (control characters, very long) are quoted and cut: a warning names a field, nothing more.
func (m *merger) drop(path string) {
	if len(path) > 160 || strings.IndexFunc(path, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		path = strconv.Quote(truncate(path, 160))
	}
	if !slices.Contains(m.dropped, path) {
		m.dropped = append(m.dropped, path)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (m *merger) diffTop(snap, cp *object) {
	for _, k := range cp.keys {
		cv := cp.vals[k]
		sv, inSnap := snap.get(k)
		switch {
		case k == "providers":
			m.diffProviders(snap.getObject("providers"), cp.getObject("providers"))
		case inSnap && equal(sv, cv):
		case k == "lastUsedProvider" && cv == m.target:
			// the CLI records the provider it ran (the override's): restored, like on the host
		default:
			m.drop(k)
		}
	}
}

func (m *merger) diffProviders(snap, cp *object) {
	if cp == nil {
		return
	}
	for _, id := range cp.keys {
		cb := cp.getObject(id)
		var sb *object
		if snap != nil {
			sb = snap.getObject(id)
		}
		switch {
		case sb == nil && cb != nil && stub(cb):
			// what the CLI writes for -P of an unconfigured provider (or its invalid-entry wipe)
		case sb == nil:
			m.drop("providers." + id + " (a provider that was not in the copy)")
		case cb == nil:
			m.drop("providers." + id)
		default:
			m.diffBlock(id, sb, cb)
		}
	}
}

// diffBlock sorts the changes inside one provider block that existed before the run.
func (m *merger) diffBlock(id string, sb, cb *object) {
	var changed []merge
	var walk func(path string, s, c *object)
	walk = func(path string, s, c *object) {
		for _, k := range c.keys {
			p := strings.TrimPrefix(path+"."+k, ".")
			cv := c.vals[k]
			var sv any
			inSnap := false
			if s != nil {
				sv, inSnap = s.get(k)
			}
			if inSnap && equal(sv, cv) {
				continue
			}
			co, cIsObj := cv.(*object)
			so, sIsObj := sv.(*object)
			if _, leaf := refreshFields[p]; !leaf && cIsObj && (sIsObj || !inSnap) {
				walk(p, so, co)
				continue
			}
			changed = append(changed, merge{id: id, path: p, val: clone(cv), order: c.keys})
		}
	}
	walk("", sb, cb)

	oauthBefore := false
	if auth := blockSettings(sb).getObjectOrNil("auth"); auth != nil {
		_, a := auth.get("accessToken")
		_, r := auth.get("refreshToken")
		oauthBefore = a || r
	}
	sameAccount := true
	for _, c := range changed {
		if c.path == "settings.auth.accountId" {
			if old, ok := dig(sb, "settings", "auth", "accountId"); ok && !equal(old, c.val) {
				sameAccount = false
			}
		}
	}
	var allowed []merge
	var extra []merge // updatedAt and tokenSource: they follow an allowed change
	prefix := "providers." + id + "."
	for _, c := range changed {
		kind, isRefresh := refreshFields[c.path]
		switch {
		case isRefresh && oauthBefore && sameAccount && kind.accepts(c.val):
			allowed = append(allowed, c)
		case isRefresh && !oauthBefore:
			m.drop(prefix + c.path + " (the provider held no OAuth credential before the run)")
		case isRefresh && !sameAccount:
			m.drop(prefix + c.path + " (tokens of another account)")
		case c.path == "updatedAt":
			extra = append(extra, c)
		case c.path == "tokenSource" && c.val == "oauth":
			extra = append(extra, c)
		case id == m.target && (c.path == "settings.model" || c.path == "settings.reasoning" || strings.HasPrefix(c.path, "settings.reasoning.")):
			// the override's tracked fields: never kept, like on the host
		case c.path == "settings.provider" && c.val == id:
		default:
			m.drop(prefix + c.path)
		}
	}
	if len(allowed) > 0 {
		m.merges = append(m.merges, allowed...)
		m.merges = append(m.merges, extra...)
	}
}

// apply writes the allowed values into host; a provider block removed from the host meanwhile
// stays removed. It reports whether host changed.
func (m *merger) apply(host *object) bool {
	hps := host.getObject("providers")
	if hps == nil {
		return false
	}
	changed := false
	for _, mg := range m.merges {
		hb := hps.getObject(mg.id)
		if hb == nil {
			continue
		}
		keys := strings.Split(mg.path, ".")
		o := hb
		for _, k := range keys[:len(keys)-1] {
			next := o.getObject(k)
			if next == nil {
				if _, ok := o.get(k); ok {
					o = nil // not an object on the host: not ours to fix
					break
				}
				next = newObject()
				o.set(k, next)
			}
			o = next
		}
		if o == nil {
			continue
		}
		last := keys[len(keys)-1]
		if cur, ok := o.get(last); ok && equal(cur, mg.val) {
			continue
		}
		o.setLike(last, mg.val, mg.order)
		changed = true
	}
	return changed
}

func (o *object) getObjectOrNil(k string) *object {
	if o == nil {
		return nil
	}
	return o.getObject(k)
}

// dig returns the value at path below o.
func dig(o *object, path ...string) (any, bool) {
	var v any = o
	for _, k := range path {
		obj, ok := v.(*object)
		if !ok || obj == nil {
			return nil, false
		}
		if v, ok = obj.get(k); !ok {
			return nil, false
		}
	}
	return v, true
}

func lostProviders(snap, cp *object) []string {
	sps, cps := snap.getObject("providers"), cp.getObject("providers")
	if sps == nil {
		return nil
	}
	var lost []string
	for _, id := range sps.keys {
		if cps == nil {
			lost = append(lost, id)
		} else if _, ok := cps.get(id); !ok {
			lost = append(lost, id)
		}
	}
	return lost
}

// stub reports a provider block that carries nothing a user would miss: no credential, no setting beyond the
// provider id, the model and reasoning. Cline writes such blocks for any -P it is given, and its invalid-entry
// wipe leaves one for "cline".
func stub(block *object) bool {
	for _, k := range block.keys {
		if !slices.Contains([]string{"settings", "updatedAt", "tokenSource"}, k) {
			return false
		}
	}
	settings := block.getObject("settings")
	if settings == nil {
		return true
	}
	for _, k := range settings.keys {
		if !slices.Contains([]string{"provider", "model", "reasoning"}, k) {
			return false
		}
	}
	return true
}

// errCopyFile is a settings copy that is not a plain regular file.
var errCopyFile = errors.New("not a regular file")

// read returns the container's providers.json. Every path component below Dir is checked with
// Lstat first: a symlink anywhere (settings/ or providers.json), a FIFO, a socket or a device is
// refused, and so is a file over maxFileSize. On the real file system the read goes through an
// os.Root at Dir, opened without blocking, and must be the very file that was checked.
func (c *Copy) read() ([]byte, error) {
	rel := []string{filepath.Base(filepath.Dir(c.SettingsPath)), filepath.Base(c.SettingsPath)}
	if _, ok := c.fs.(*afero.OsFs); !ok {
		return c.readFS(rel)
	}
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	dir, err := root.Lstat(rel[0])
	if err != nil {
		return nil, err
	}
	if !dir.IsDir() {
		return nil, fmt.Errorf("%s: %w (the settings dir was replaced)", rel[0], errCopyFile)
	}
	name := filepath.Join(rel...)
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if err := checkCopyFile(name, fi); err != nil {
		return nil, err
	}
	f, err := root.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !os.SameFile(fi, now) {
		return nil, fmt.Errorf("%s: replaced while it was opened", name)
	}
	return readCapped(f, name)
}

// readFS is read for other afero file systems (tests): the same checks without os.Root.
func (c *Copy) readFS(rel []string) ([]byte, error) {
	lstat := func(p string) (fs.FileInfo, error) {
		if l, ok := c.fs.(afero.Lstater); ok {
			fi, _, err := l.LstatIfPossible(p)
			return fi, err
		}
		return c.fs.Stat(p)
	}
	dir, err := lstat(filepath.Join(c.Dir, rel[0]))
	if err != nil {
		return nil, err
	}
	if !dir.IsDir() {
		return nil, fmt.Errorf("%s: %w (the settings dir was replaced)", rel[0], errCopyFile)
	}
	fi, err := lstat(c.SettingsPath)
	if err != nil {
		return nil, err
	}
	if err := checkCopyFile(filepath.Join(rel...), fi); err != nil {
		return nil, err
	}
	f, err := c.fs.Open(c.SettingsPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, filepath.Join(rel...))
}

func checkCopyFile(name string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		kind := "a " + fi.Mode().Type().String()
		if fi.Mode()&fs.ModeSymlink != 0 {
			kind = "a symlink"
		} else if fi.Mode()&fs.ModeNamedPipe != 0 {
			kind = "a FIFO"
		}
		return fmt.Errorf("%s: %w (%s)", name, errCopyFile, kind)
	}
	if fi.Size() > maxFileSize {
		return fmt.Errorf("%s: over the %d byte limit", name, maxFileSize)
	}
	return nil
}

func readCapped(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("read %s: over the %d byte limit", name, maxFileSize)
	}
	return data, nil
}
