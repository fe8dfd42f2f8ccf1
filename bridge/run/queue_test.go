package run

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// positions records what one waiter was told, in order.
type positions struct {
	mu   sync.Mutex
	seen []int
	ch   chan int
}

func newPositions() *positions { return &positions{ch: make(chan int, 100)} }

func (p *positions) moved(pos int) {
	p.mu.Lock()
	p.seen = append(p.seen, pos)
	p.mu.Unlock()
	p.ch <- pos
}

func (p *positions) all() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

func TestSlotsFIFOAndPositions(t *testing.T) {
	s := &slots{limit: 2}
	ctx := t.Context()
	r1, err := s.acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Three waiters arrive in order; each is told its place in line.
	order := make(chan int, 3)
	var pos [3]*positions
	releases := make(chan func(), 3)
	for i := range 3 {
		pos[i] = newPositions()
		go func() {
			r, err := s.acquire(ctx, pos[i].moved)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			releases <- r
		}()
		if got := <-pos[i].ch; got != i+1 {
			t.Fatalf("waiter %d: told position %d, want %d", i, got, i+1)
		}
	}
	r1() // the head goes; the others move up
	if got := <-order; got != 0 {
		t.Fatalf("waiter %d got the slot first, want 0", got)
	}
	if got := <-pos[1].ch; got != 1 {
		t.Errorf("waiter 1 told %d after the head left, want 1", got)
	}
	if got := <-pos[2].ch; got != 2 {
		t.Errorf("waiter 2 told %d after the head left, want 2", got)
	}
	r2()
	if got := <-order; got != 1 {
		t.Fatalf("waiter %d got the second slot, want 1", got)
	}
	(<-releases)()
	if got := <-order; got != 2 {
		t.Fatalf("waiter %d got the third slot, want 2", got)
	}
	(<-releases)()
	(<-releases)()
	if s.running != 0 || s.waiting() != 0 {
		t.Errorf("after all released: running %d, waiting %d, want 0 and 0", s.running, s.waiting())
	}
	if got := pos[0].all(); !slices.Equal(got, []int{1}) {
		t.Errorf("the head was told %v, want [1]", got)
	}
}

// TestSlotsCancelledWaiterLeavesNoTrace: a waiter whose context ends returns ctx.Err() without a
// slot, the line closes up behind it (and says so), and the slot it never got goes to the next.
func TestSlotsCancelledWaiterLeavesNoTrace(t *testing.T) {
	s := &slots{limit: 1}
	hold, err := s.acquire(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	first := newPositions()
	gotErr := make(chan error, 1)
	go func() {
		_, err := s.acquire(ctx, first.moved)
		gotErr <- err
	}()
	<-first.ch
	second := newPositions()
	granted := make(chan func(), 1)
	go func() {
		r, err := s.acquire(t.Context(), second.moved)
		if err != nil {
			t.Error(err)
		}
		granted <- r
	}()
	if got := <-second.ch; got != 2 {
		t.Fatalf("second waiter told %d, want 2", got)
	}
	cancel()
	if err := <-gotErr; err != context.Canceled {
		t.Fatalf("cancelled waiter got %v, want context.Canceled", err)
	}
	if got := <-second.ch; got != 1 {
		t.Errorf("second waiter told %d after the first left, want 1", got)
	}
	if s.waiting() != 1 {
		t.Errorf("waiting %d, want 1", s.waiting())
	}
	hold()
	(<-granted)()
	if s.running != 0 || s.waiting() != 0 {
		t.Errorf("running %d, waiting %d, want none", s.running, s.waiting())
	}
	if _, err := s.acquire(ctx, nil); err != context.Canceled {
		t.Errorf("acquire with an ended context: got %v, want context.Canceled", err)
	}
}

// TestSlotsNeverMoreThanLimit: 50 goroutines through 3 slots; the number inside never exceeds 3
// and reaches it (the first three wait inside for each other).
func TestSlotsNeverMoreThanLimit(t *testing.T) {
	s := &slots{limit: 3}
	var mu sync.Mutex
	inside, peak := 0, 0
	full := make(chan struct{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			r, err := s.acquire(t.Context(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			peak = max(peak, inside)
			if peak == 3 && inside == 3 {
				select {
				case <-full:
				default:
					close(full)
				}
			}
			mu.Unlock()
			<-full
			runtime.Gosched()
			mu.Lock()
			inside--
			mu.Unlock()
			r()
		})
	}
	wg.Wait()
	if peak != 3 {
		t.Errorf("peak %d inside, want exactly the limit 3", peak)
	}
}

func TestSlotsUnlimited(t *testing.T) {
	var s slots
	for range 200 {
		if _, err := s.acquire(t.Context(), func(int) { t.Error("an unlimited call was queued") }); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyedSlots: one key runs one holder at a time; another key does not wait; entries go away.
func TestKeyedSlots(t *testing.T) {
	var k keyedSlots
	ra, err := k.acquire(t.Context(), "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := k.acquire(t.Context(), "b", func(int) { t.Error("key b waited for key a") })
	if err != nil {
		t.Fatal(err)
	}
	pos := newPositions()
	got := make(chan func(), 1)
	go func() {
		r, err := k.acquire(t.Context(), "a", pos.moved)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	if p := <-pos.ch; p != 1 {
		t.Errorf("second holder of a told %d, want 1", p)
	}
	select {
	case <-got:
		t.Fatal("a second holder of key a got in while the first held it")
	default:
	}
	ra()
	(<-got)()
	rb()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.keys) != 0 {
		t.Errorf("entries left: %v", k.keys)
	}
}

func TestCheckoutKey(t *testing.T) {
	root := t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	repo := filepath.Join(root, "repo")
	sub := filepath.Join(repo, "a", "b")
	linked := filepath.Join(root, "linked")
	for _, d := range []string{filepath.Join(repo, ".git"), sub, linked, filepath.Join(root, "plain")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(linked, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git", "worktrees", "x")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		repo:                           repo,
		sub:                            repo,
		linked:                         linked, // a linked worktree is its own checkout
		filepath.Join(root, "plain"):   filepath.Join(root, "plain"),
		filepath.Join(sub, "..", ".."): repo,
	}
	if runtime.GOOS != "windows" {
		link := filepath.Join(root, "link")
		if err := os.Symlink(sub, link); err != nil {
			t.Fatal(err)
		}
		cases[link] = repo
	}
	for dir, want := range cases {
		if got := checkoutKey(dir); got != want {
			t.Errorf("checkoutKey(%s) = %s, want %s", dir, got, want)
		}
	}
}
