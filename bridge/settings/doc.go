// Package settings owns everything the bridge does to Cline's providers.json: finding it the way the real CLI
// does (Path), the private copies a run works on when it must not touch the user's file (HostCopy for a host
// run with a provider/model override, PrivateCopy for a container) and the merge back of refreshed
// credentials (MergeAllowed), the guard against the CLI wiping providers when one entry fails its schema
// (Begin, Run.End), the cross-process lock around every write (LockPath), and the atomic write itself.
//
// A default host run works on the user's file itself, so the CLI's own token refreshes land there:
//
//	run, warns, err := store.Begin(ctx)  // err only when ctx ended while it waited for a merge-back
//	defer: warns = append(warns, run.End()...) — End runs on every path, also cancel/failure
//
// A host override run and a Docker run work on a copy; the user's file never carries an override:
//
//	c, err := store.HostCopy(dir, ov)   // or store.PrivateCopy(dir, ov) for a container
//	run Cline with CLINE_PROVIDER_SETTINGS_PATH=c.SettingsPath (a container: data dir c.Dir)
//	warns := store.MergeAllowed(c); c.Close()
//
// Each write of the user's file (End's repair, MergeAllowed) is one read-modify-write under the Store's mutex
// and an advisory file lock, LockPath(Path), that every cline-mcp process of the user takes: it re-reads the
// file after locking and renames its result over the file only if the file still holds what it read, so a
// refresh merged by another process, or written by a running CLI, is not lost. Within the process, default
// runs (whose CLI writes the user's file) share a fair hold on the Store from Begin to End, and a merge-back
// with something to write holds it alone for that write only; an override never excludes anything.
//
// The trust boundary: the container's copy holds only the provider the run may use (PrivateCopy), and
// MergeAllowed is the only way anything a copy's run wrote reaches the user's file — refreshed OAuth credentials
// of a provider that was in the copy, checked against the pre-run copy and an allow-list (refreshFields);
// everything else is dropped with a warning naming the field. The escape tests sit beside it
// (escape_unix_test.go).
//
// Nothing here ever fails a run: problems with the settings file come back as warning strings, which never
// contain values from the file (keys and tokens stay out of logs and tool results).
package settings
