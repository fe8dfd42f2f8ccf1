// Package service is what makes cline-mcp a shared service: tenants named by bearer tokens (a
// token file of hashes, re-read when it changes), the HTTP check that lets only a known token
// through, and each tenant's admission: concurrent runs, a bounded queue, background jobs and
// spend per UTC day. It knows nothing of MCP: the caller's tenant travels in the request's
// context, from Auth to Runner and to the MCP layer's job ownership.
package service

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

type tenantKey struct{}
type backgroundKey struct{}

// WithTenant returns ctx carrying t.
func WithTenant(ctx context.Context, t Tenant) context.Context {
	return context.WithValue(ctx, tenantKey{}, t)
}

// TenantFrom returns the tenant ctx carries.
func TenantFrom(ctx context.Context) (Tenant, bool) {
	t, ok := ctx.Value(tenantKey{}).(Tenant)
	return t, ok
}

// Owner is the name of the tenant ctx carries ("" for none): whose jobs a call may see.
func Owner(ctx context.Context) string {
	t, _ := TenantFrom(ctx)
	return t.Name
}

// AsBackground marks ctx as a background job's: its run waits for a slot without counting
// against MaxQueued (MaxJobs bounds those).
func AsBackground(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

func isBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKey{}).(bool)
	return b
}

// Authenticator finds the tenant a bearer token names.
type Authenticator interface {
	Lookup(token string) (Tenant, bool)
}

// Auth lets a request through to next only with "Authorization: Bearer <token>" naming a tenant,
// which it puts into the request's context; any other request is answered 401 with a
// WWW-Authenticate challenge and a JSON error, and never reaches next. The token is never
// logged or echoed. A nil Authenticator admits every request as local (for a loopback-only
// service without a token file).
func Auth(tokens Authenticator, local Tenant, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tokens == nil {
			next.ServeHTTP(w, r.WithContext(WithTenant(r.Context(), local)))
			return
		}
		token, ok := bearer(r.Header.Values("Authorization"))
		t, known := tokens.Lookup(token)
		if !ok || !known {
			msg := "a bearer token is required: send Authorization: Bearer <token>"
			if ok {
				msg = "the bearer token is not valid for this service"
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="cline-mcp"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
			return
		}
		r.Header.Del("Authorization") // nothing after this point sees the token
		next.ServeHTTP(w, r.WithContext(WithTenant(r.Context(), t)))
	})
}

// bearer is the token of exactly one "Bearer <token>" header (the scheme case-insensitive).
func bearer(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}
