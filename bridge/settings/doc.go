// Package settings owns everything the bridge does to Cline's providers.json: finding it the way the real CLI
// does (Path), the private copies a run works on when it must not touch the user's file (HostCopy for a host
// run with a provider/model override, PrivateCopy for a container) and the merge back of refreshed
// credentials (MergeAllowed), the guard against the CLI wiping providers when one entry fails its schema
// (Begin, Run.End), the cross-process lock around every write (LockPath), and the atomic write itself.
//
// A default host run works on the user's file itself, so the CLI's own token refreshes land there:
//
//	run, warns, err := store.Begin(ctx)  // err only when ctx ended while it waited for a merge-back
//	defer: warns = append(warns, run.End(ectx)...) — End runs on every path, also cancel/failure, on a bounded ctx
//
// A host override run and a Docker run work on a copy; the user's file never carries an override:
//
//	f, err := store.EnsureFresh(ctx, ov, deadline, nil) // a container only: the OAuth token must outlive the run
//	c, err := store.HostCopy(dir, ov)              // or store.PrivateCopy(dir, ov) for a container
//	run Cline with CLINE_PROVIDER_SETTINGS_PATH=c.SettingsPath (a container: data dir c.Dir)
//	warns := store.MergeAllowed(ectx, c, nil); secrets := c.Secrets(); c.Close()
//
// Each write of the user's file (End's repair, MergeAllowed) is one read-modify-write under the Store's mutex
// and an advisory file lock, LockPath(Path), that every cline-mcp process of the user takes: it re-reads the
// file after locking and renames its result over the file only if the file still holds what it read, so a
// refresh merged by another process, or written by a running CLI, is not lost. Within the process, default
// runs (whose CLI writes the user's file) share a fair hold on the Store from Begin to End, and a merge-back
// with something to write holds it alone for that write only; an override never excludes anything.
//
// The trust boundary: the container's copy holds only the provider the run may use, with its access
// token and never its refresh token (PrivateCopy), so nothing about credentials can come back from
// a container — a token swap cannot be told from a refresh, so there is no refresh to merge: the
// host refreshes before the run instead (EnsureFresh, under the same lock as every write, against
// an endpoint that comes from the user's file or the server's environment, never from a copy).
// MergeAllowed is the only way anything a copy's run wrote is read back: from a container's copy
// nothing is kept and every change is named in a warning; from a host run's copy (the CLI on the
// user's own machine, which holds the refresh token anyway) only refreshed OAuth credentials of a
// provider that was in the copy, checked against the pre-run copy and an allow-list of known small
// fields (refreshFields). Every JSON read of a file or copy goes through one parser with a size
// (4 MiB) and depth (256) limit. The escape tests sit beside it (escape_unix_test.go, depth_test.go).
//
// Nothing here ever fails a run but EnsureFresh, whose *AuthError names the provider and the fix;
// problems with the settings file come back as warning strings, which never contain values from the
// file (keys and tokens stay out of logs and tool results). The values a call learns — a host
// refresh's tokens (Fresh.Secrets) and what a run's copy held afterwards (Copy.Secrets) — are handed
// to the caller to redact.
package settings
