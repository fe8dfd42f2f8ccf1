// Package settings owns everything the bridge does to Cline's providers.json: finding it the way the real CLI
// does (Path), the fair readers-writer lock that orders runs against each other (RWLock), the snapshot taken
// before a run and the restore after it (Store.Begin, Run.End), the guard against the CLI wiping providers when
// one entry fails its schema, the atomic write used for every change, and the private copy of the settings dir
// a Docker run works on plus the merge back into the host file (Store.PrivateCopy, Store.MergeAllowed).
//
// A host run:
//
//	lock.Lock(ctx) for an override, lock.RLock(ctx) otherwise (ctx.Err() → result kind "cancelled")
//	run, warns := store.Begin(ov)
//	defer: warns = append(warns, run.End()...); then unlock — End runs on every path, also cancel/failure
//
// A Docker run: take the read lock, c, err := store.PrivateCopy("", ov), release it; run the container with
// c.Dir as its data dir; then take the write lock for warns := store.MergeAllowed(c) only; c.Close().
//
// The trust boundary: the copy holds only the provider the run may use (PrivateCopy), and MergeAllowed is the
// only way anything the container wrote reaches the host file — refreshed OAuth credentials of a provider that
// was in the copy, checked against the pre-run copy and an allow-list (refreshFields); everything else is
// dropped with a warning naming the field. The escape tests sit beside it (escape_test.go).
//
// Nothing here ever fails a run: problems with the settings file come back as warning strings, which never
// contain values from the file (keys and tokens stay out of logs and tool results).
package settings
