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

// TestStressLockDiscipline: 100 concurrent calls, a mix of default runs (read lock) and overrides (write lock),
// each simulating a CLI run that rewrites the tracked fields and writes a fresh OAuth token, while a reader
// parses the file non-stop. At the end: no torn or corrupt file was ever seen, the token is the last one
// written, the tracked fields are what they were before the first run, and nothing deadlocked.
func TestStressLockDiscipline(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	s := realStore(t)
	initial := edit(t, testdata(t, "o_provider_override.before.json"), oauth("openai-compatible", "tok-initial", "rt", 1))
	writeReal(t, s.Path, initial, 0o600)

	var lock RWLock
	var cliMu sync.Mutex // the simulated CLIs' own read-modify-write; real CLIs race here, which is not ours to fix
	var lastToken string
	var corrupt, reads atomic.Int64
	overrides := []Override{{}, {"openai-native", "gpt-x"}, {Model: "m-x"}, {"lmstudio", "lm"}, {}, {}}

	cli := func(i int, ov Override) error {
		cliMu.Lock()
		defer cliMu.Unlock()
		data, err := os.ReadFile(s.Path)
		if err != nil {
			return err
		}
		o, err := parseObject(data)
		if err != nil {
			corrupt.Add(1)
			return err
		}
		p := ov.Provider
		if p == "" {
			p, _ = o.vals["lastUsedProvider"].(string)
		}
		setPath(o, "lastUsedProvider", p)
		setPath(o, "providers."+p+".settings.provider", p)
		if ov.Model != "" {
			setPath(o, "providers."+p+".settings.model", ov.Model)
			setPath(o, "providers."+p+".settings.reasoning", map[string]any{"effort": "high"})
		}
		token := fmt.Sprintf("tok-%d", i)
		setPath(o, "providers.openai-compatible.settings.auth.accessToken", token)
		tmp := fmt.Sprintf("%s.%d.tmp", s.Path, i)
		if err := os.WriteFile(tmp, o.encode(), 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, s.Path); err != nil {
			return err
		}
		lastToken = token
		return nil
	}

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
			if err != nil {
				corrupt.Add(1)
				continue
			}
			if _, err := parseObject(data); err != nil {
				corrupt.Add(1)
			}
			reads.Add(1)
		}
	}()

	var wg sync.WaitGroup
	start := time.Now()
	for i := range 100 {
		ov := overrides[i%len(overrides)]
		wg.Go(func() {
			ctx := t.Context()
			if ov.IsZero() {
				if err := lock.RLock(ctx); err != nil {
					t.Error(err)
					return
				}
				defer lock.RUnlock()
			} else {
				if err := lock.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				defer lock.Unlock()
			}
			run, warns := s.Begin(ov)
			defer func() { warns = append(warns, run.End()...); checkWarnings(t, warns, nil) }()
			if err := cli(i, ov); err != nil {
				t.Error(err)
			}
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

	if n := corrupt.Load(); n != 0 {
		t.Errorf("got %d corrupt reads, want 0", n)
	}
	data, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	final, err := parseObject(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := final.getObject("providers").getObject("openai-compatible").getObject("settings").getObject("auth").vals["accessToken"]; got != lastToken {
		t.Errorf("got token %v, want the last written %s", got, lastToken)
	}
	orig, _ := parseObject(initial)
	if got, want := final.vals["lastUsedProvider"], orig.vals["lastUsedProvider"]; got != want {
		t.Errorf("got lastUsedProvider %v, want %v", got, want)
	}
	for _, id := range []string{"openai-compatible", "openai-native"} {
		got := final.getObject("providers").getObject(id).getObject("settings")
		want := orig.getObject("providers").getObject(id).getObject("settings")
		for _, k := range []string{"model", "reasoning"} {
			g, gok := got.get(k)
			w, wok := want.get(k)
			if gok != wok || !equal(g, w) {
				t.Errorf("%s.%s: got %v (present %v), want %v (present %v)", id, k, g, gok, w, wok)
			}
		}
	}
}
