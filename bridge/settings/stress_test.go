package settings

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStressOverridesNeverReachTheUserFile: 100 concurrent calls, a third default runs (Begin/End on
// the user's file) and the rest overrides of 20 OAuth providers (HostCopy, a simulated CLI that writes
// the override and a fresh token into the copy, MergeAllowed), while a reader parses the user's file
// non-stop. Every read sees a whole file with the defaults (no override ever reaches it), every
// provider ends with the token of its last merged refresh, and nothing deadlocks. (The simulated
// default runs do not write the user's file: a real CLI's own writes are not under our lock.)
func TestStressOverridesNeverReachTheUserFile(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	s := realStore(t)
	s.LockPath = LockPath(s.Path)
	const providers = 20
	initial := testdata(t, "o_provider_override.before.json")
	for i := range providers {
		initial = edit(t, initial, func(o *object) {
			id := fmt.Sprintf("tok-%02d", i)
			setPath(o, "providers."+id+".settings", map[string]any{"provider": id, "model": "saved-" + id})
			oauth(id, "at-initial", "rt-initial", 1)(o)
		})
	}
	writeReal(t, s.Path, initial, 0o600)
	orig, _ := parseObject(initial)

	var bad, reads atomic.Int64
	var lastToken sync.Map // provider id → token of its last merge
	var mergeMu [providers]sync.Mutex

	stopReader := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stopReader:
				return
			default:
			}
			data, err := os.ReadFile(s.Path)
			o, perr := parseObject(data)
			if err != nil || perr != nil {
				bad.Add(1)
				continue
			}
			if !equal(o.vals["lastUsedProvider"], orig.vals["lastUsedProvider"]) {
				bad.Add(1)
			}
			for id, b := range orig.getObject("providers").vals {
				want, _ := blockSettings(b.(*object)).get("model")
				if got, _ := blockSettings(o.getObject("providers").getObject(id)).get("model"); !equal(got, want) {
					bad.Add(1)
				}
			}
			reads.Add(1)
		}
	}()

	var wg sync.WaitGroup
	start := time.Now()
	for i := range 100 {
		wg.Go(func() {
			if i%3 == 0 {
				run, warns := begin(t, s)
				checkWarnings(t, append(warns, run.End(context.Background())...), nil)
				return
			}
			p := i % providers
			id := fmt.Sprintf("tok-%02d", p)
			c, err := s.HostCopy("", Override{Provider: id, Model: fmt.Sprintf("m-%d", i)})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			token := fmt.Sprintf("at-%03d", i)
			writeReal(t, c.SettingsPath, edit(t, readReal(t, c.SettingsPath), func(o *object) {
				setPath(o, "lastUsedProvider", id)
				setPath(o, "providers."+id+".settings.model", fmt.Sprintf("m-%d", i))
				setPath(o, "providers."+id+".settings.auth.accessToken", token)
			}), 0o600)
			// Merges of one provider are ordered here so the test knows which token is the last;
			// merges of different providers run concurrently.
			mergeMu[p].Lock()
			defer mergeMu[p].Unlock()
			checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), nil)
			lastToken.Store(id, token)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	watchdog, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	select {
	case <-done:
	case <-watchdog.Done():
		t.Fatal("deadlock: 100 runs did not finish within 2 minutes")
	}
	close(stopReader)
	<-readerDone
	t.Logf("100 runs in %v; %d concurrent reads", time.Since(start), reads.Load())
	if n := bad.Load(); n != 0 {
		t.Errorf("got %d reads of a corrupt file or one carrying an override, want 0", n)
	}
	final, err := parseObject(readReal(t, s.Path))
	if err != nil {
		t.Fatal(err)
	}
	lastToken.Range(func(k, v any) bool {
		got, _ := dig(final, "providers", k.(string), "settings", "auth", "accessToken")
		if got != v {
			t.Errorf("%s: got token %v, want the last merged %v", k, got, v)
		}
		return true
	})
}
