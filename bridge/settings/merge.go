package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// refreshFields are the only values MergeAllowed brings back, and only from a host run's copy
// (HostCopy: the CLI on the user's own machine, which holds the refresh token anyway): what the
// Cline CLI writes when it refreshes an OAuth token during a run. Its token manager
// (sdk/packages/core/src/runtime/orchestration/runtime-oauth-token-manager.ts in cline/cline)
// saves the result of saveOAuthCredentials (sdk/packages/core/src/auth/provider-auth-registry.ts):
// providers[id].settings.auth = {...auth, accessToken, refreshToken, accountId, expiresAt,
// metadata: {...metadata, ...new}}, with the block's updatedAt and tokenSource "oauth" and
// setLastUsed false. The metadata keys are those the refreshes of the cline, oca and openai-codex
// providers write (auth/cline.ts, auth/oca.ts, auth/codex.ts) minus "provider" and "mode", which
// pick where the next refresh goes and never change in a refresh; userInfo only as its known short
// string members (userInfoFields), never as an object. A container's copy brings nothing back: it
// never held a refresh token (PrivateCopy), so a changed token there is not a refresh, and a swap
// to another account's tokens cannot be told from one. The README lists them.
var refreshFields = map[string]valueKind{
	"settings.auth.accessToken":                   kindToken,
	"settings.auth.refreshToken":                  kindToken,
	"settings.auth.expiresAt":                     kindInt,
	"settings.auth.accountId":                     kindShort,
	"settings.auth.metadata.tokenType":            kindShort,
	"settings.auth.metadata.userInfo.subject":     kindShortOrNull,
	"settings.auth.metadata.userInfo.email":       kindShortOrNull,
	"settings.auth.metadata.userInfo.name":        kindShortOrNull,
	"settings.auth.metadata.userInfo.clineUserId": kindShortOrNull,
	"settings.auth.metadata.subject":              kindShort,
	"settings.auth.metadata.idToken":              kindToken,
	"settings.auth.metadata.sessionStartedAtMs":   kindInt,
}

// quietDrops are changes an honest refresh makes that are not kept, without a warning: the
// accounts list the Cline API adds to userInfo.
var quietDrops = []string{"settings.auth.metadata.userInfo.accounts"}

type valueKind int

const (
	kindToken       valueKind = iota // a string up to maxRefreshValue
	kindShort                        // a string up to maxShortValue
	kindShortOrNull                  // the same, or null
	kindInt                          // a positive integer
)

// maxRefreshValue bounds a merged token (JWTs are a few KiB).
const maxRefreshValue = 16 << 10

func (k valueKind) accepts(v any) bool {
	switch k {
	case kindToken:
		s, ok := v.(string)
		return ok && len(s) <= maxRefreshValue
	case kindShort:
		s, ok := v.(string)
		return ok && len(s) <= maxShortValue
	case kindShortOrNull:
		s, ok := v.(string)
		return v == nil || (ok && len(s) <= maxShortValue)
	case kindInt:
		n, ok := v.(json.Number)
		i, err := n.Int64()
		return ok && err == nil && i > 0
	}
	return false
}

// MergeAllowed is the only way back from a run's private settings copy (PrivateCopy for a
// container, HostCopy for a host override run) into the user's file: it crosses the trust boundary
// with the pre-run copy as the base and refreshFields as the allow-list. From a container's copy
// it keeps nothing: every credential the container wrote is dropped with a warning naming the
// fields. From a host run's copy it keeps only refreshed OAuth credentials of providers that were
// in the copy before the run and already held an OAuth credential then; when the copy recorded an
// accountId, the new tokens must be for the same account. Either way the credential values the copy
// holds afterwards become the copy's Secrets, for the call to redact. Everything else the run changed — baseUrl, apiKey,
// headers, a new provider, lastUsedProvider, any unknown field — is dropped with one warning that
// names the fields, never their values. The writes an honest run makes (lastUsedProvider and the
// target's model/reasoning for an override, updatedAt, a stub block for -P) are dropped silently,
// so an override never reaches the user's file. A copy that is a symlink (or sits behind one), a FIFO or another
// non-regular file, bigger than 4 MiB or not a JSON object is ignored with a warning; nothing is
// ever read through a symlink in the copy. Changes made to the host file meanwhile are kept; where
// both sides changed the same credential, the copy's (newer) value wins. Nothing merged → no
// write. When there is something to write, it waits for the default runs of this Store to end (their
// CLIs write the user's file; see Begin) and writes alone, as one read-modify-write under the
// cross-process lock (see update), so a refresh another process merged or wrote meanwhile is kept. It
// never waits while it has nothing to write. under is the default run this copy was made during (a
// retry in a container), or nil: a merge under a run does not take the exclusive hold, which the
// run's own shared hold would block. ctx bounds every wait. It returns warnings, never an error.
func (s *Store) MergeAllowed(ctx context.Context, c *Copy, under *Run) []string {
	return s.mergeAllowed(ctx, c, under != nil)
}

func (s *Store) mergeAllowed(ctx context.Context, c *Copy, held bool) []string {
	if c == nil {
		return nil
	}
	data, err := c.read()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // nothing to merge; deletions are never merged
	case err != nil:
		return []string{fmt.Sprintf("settings: the settings copy of %s was ignored (%v); nothing merged back into %s", c.runName(), errText(err), s.Path)}
	}
	cp, err := parseObject(data)
	if err != nil {
		return []string{fmt.Sprintf("settings: %s left an unusable settings copy (%v); nothing merged back into %s", c.runName(), err, s.Path)}
	}
	c.secrets = append(c.secrets, credentialValues(cp)...)
	snap := newObject()
	if c.existed {
		if snap, err = parseObject(c.snapshot); err != nil {
			return []string{fmt.Sprintf("settings: the private copy made for %s is not usable (%v); nothing merged back", c.runName(), err)}
		}
	}
	m := &merger{target: c.Target, fresh: !c.existed, container: !c.host}
	m.diffTop(snap, cp)

	var warns []string
	if lost := lostProviders(snap, cp); len(lost) > 0 {
		warns = append(warns, fmt.Sprintf("settings: Cline dropped provider(s) %s from its private copy during the run (one entry probably fails its schema); %s keeps them", strings.Join(lost, ", "), s.Path))
	}
	if len(m.creds) > 0 {
		warns = append(warns, fmt.Sprintf("settings: the container wrote credentials into its settings copy (%s); nothing about credentials comes back from a container (it never held a refresh token), so they were dropped and %s keeps its own",
			strings.Join(firstN(m.creds, 10), ", "), s.Path))
	}
	if len(m.dropped) > 0 {
		keep := "only refreshed OAuth credentials are merged back into " + s.Path
		if m.container {
			keep = "nothing of a container's copy is merged back into " + s.Path
		}
		warns = append(warns, fmt.Sprintf("settings: the run changed %s in its private settings copy; %s, so these were dropped",
			strings.Join(firstN(m.dropped, 10), ", "), keep))
	}
	if len(m.merges) == 0 {
		return warns
	}
	if !held {
		if err := s.runs.Lock(ctx); err != nil {
			return append(warns, fmt.Sprintf("settings: gave up waiting for the default runs of this server to end before merging refreshed credentials of %s into %s (%v); the credentials refreshed during the run were not kept", c.runName(), s.Path, err))
		}
		defer s.runs.Unlock()
	}
	return append(warns, s.update(ctx, "credentials refreshed during the run were not kept", func(hostData []byte, err error) ([]byte, []string) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil // the providers it would refresh are gone
		case err != nil:
			return nil, []string{fmt.Sprintf("settings: cannot read %s (%v); nothing merged back from %s", s.Path, errText(err), c.runName())}
		}
		host, err := parseObject(hostData)
		if err != nil {
			return nil, []string{fmt.Sprintf("settings: %s is not usable (%v); nothing merged back from %s, the file was left untouched", s.Path, err, c.runName())}
		}
		if !m.apply(host) {
			return nil, nil
		}
		return host.encode(), nil
	})...)
}

// merger sorts the run's changes into allowed merges and dropped field names.
type merger struct {
	target    string
	fresh     bool // the copy started without a providers.json: the CLI writes its skeleton
	container bool // a container's copy: no credential comes back
	merges    []merge
	dropped   []string
	creds     []string // credential fields a container wrote, dropped
}

// merge is one allowed value for providers[id] at path (dotted, below the block).
type merge struct {
	id, path string
	val      any
	order    []string // key order of the object it came from
}

// drop records a field the merge leaves out. Names come from the run's copy, so odd ones
// (control characters, very long) are quoted and cut: a warning names a field, nothing more.
func (m *merger) drop(path string) { m.dropped = appendName(m.dropped, path) }

// appendName adds a field name (quoted and cut like drop's) unless it is there already.
func appendName(names []string, path string) []string {
	if len(path) > 160 || strings.IndexFunc(path, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		path = strconv.Quote(truncate(path, 160))
	}
	if slices.Contains(names, path) {
		return names
	}
	return append(names, path)
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
		case m.fresh && !inSnap && skeleton(k, cv):
			// version 1 and empty modes: what the CLI writes into a file it creates
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
		case m.container && (isRefresh || credentialPath(c.path)):
			m.creds = appendName(m.creds, prefix+c.path)
		case slices.Contains(quietDrops, c.path):
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

// skeleton reports the top-level values of a providers.json the CLI creates from nothing.
func skeleton(k string, v any) bool {
	switch k {
	case "version":
		n, ok := v.(json.Number)
		return ok && n == "1"
	case "modes":
		o, ok := v.(*object)
		return ok && len(o.keys) == 0
	}
	return false
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

// blockSettings is a provider block's settings object (nil when there is none).
func blockSettings(block *object) *object {
	if block == nil {
		return nil
	}
	return block.getObject("settings")
}
