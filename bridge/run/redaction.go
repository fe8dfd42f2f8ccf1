package run

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/cline-mcp/cline-mcp/bridge/redact"
)

// secrets is the redactor of one call. It starts with the literal secrets the server knows when
// the call begins (its environment, --docker-env, the user's providers.json) and learns every
// credential the call reads while it runs: a token the CLI refreshed in the user's file or in a
// settings copy, whatever a copy held after its run, a token the host refreshed. From the moment
// a value is learned it is redacted from everything the call returns: progress, the answer and
// every field of the result (redactResult runs last, with everything learned by then).
// Safe for concurrent use: progress is redacted on the stream's goroutine.
type secrets struct {
	cur atomic.Pointer[redact.Redactor]
	mu  sync.Mutex
	// watched are the settings files whose refreshes are learned while the run goes on.
	watched []*watchedFile
}

// watchedFile is a settings file the call re-reads when it changed, to learn refreshed tokens.
type watchedFile struct {
	path    string
	read    func() ([]byte, error)
	fromRun bool // a settings copy a run writes
	seen    bool // read once already: what changed since may come from the run (see learnJSON)
	size    int64
	mod     time.Time
}

func newSecrets(r *redact.Redactor) *secrets {
	s := &secrets{}
	s.cur.Store(r)
	return s
}

// Learn adds credential values the call came to know; everything redacted after it returns
// redacts them too. Blank and very short values are ignored (see redact.New).
func (s *secrets) Learn(values ...string) {
	if len(values) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Store(s.cur.Load().With(values...))
}

// learnJSON learns the secret-named values of a settings document (redact.SecretsFromJSON). What
// a run may have written — a settings copy, and the user's file once the call has begun (a merge-back
// writes the copy's tokens into it) — may be hostile: a value it names could hide text from the
// answer and the diff the user reviews, so only token-like values are learned from it (tokeny) —
// one word, 8 to 4096 bytes, at most maxLearnedFromRun of them.
func (s *secrets) learnJSON(data []byte, tokeny bool) {
	vals := redact.SecretsFromJSON(data)
	if tokeny {
		vals = slices.DeleteFunc(vals, func(v string) bool {
			return len(v) < 8 || len(v) > 4096 || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0
		})
		vals = vals[:min(len(vals), maxLearnedFromRun)]
	}
	s.Learn(vals...)
}

// maxLearnedFromRun bounds the values learned from one read of a run's settings copy (a settings
// file holds a handful of credentials).
const maxLearnedFromRun = 64

// watch makes refresh re-read a settings file whenever its size or modification time changed
// since it was last read. With read nil it is the user's own file; otherwise a settings copy a
// run writes, and read must be safe on whatever the run made of it (settings.Copy.ReadBack). The
// file is read once now.
func (s *secrets) watch(path string, read func() ([]byte, error)) {
	w := &watchedFile{path: path, read: read, fromRun: read != nil, size: -1}
	if read == nil {
		w.read = func() ([]byte, error) { return os.ReadFile(path) }
	}
	s.mu.Lock()
	s.watched = append(s.watched, w)
	s.mu.Unlock()
	s.refresh(true)
}

// refresh learns the credentials of every watched file that changed since it was last read (of
// every one, with force: a file system with coarse timestamps may hide a same-size rewrite). It
// costs one stat per file when nothing changed.
func (s *secrets) refresh(force bool) {
	type doc struct {
		data   []byte
		tokeny bool
	}
	s.mu.Lock()
	var changed []doc
	for _, w := range s.watched {
		stat := os.Stat // the user's own file may be a symlink (dotfiles)
		if w.fromRun {
			stat = os.Lstat // never follow what a run planted; ReadBack refuses a symlink anyway
		}
		fi, err := stat(w.path)
		if err != nil || (!force && fi.Size() == w.size && fi.ModTime().Equal(w.mod)) {
			continue
		}
		w.size, w.mod = fi.Size(), fi.ModTime()
		if b, err := w.read(); err == nil {
			changed = append(changed, doc{b, w.fromRun || w.seen})
			w.seen = true
		}
	}
	s.mu.Unlock()
	for _, d := range changed {
		s.learnJSON(d.data, d.tokeny)
	}
}

// redactor is everything learned so far.
func (s *secrets) redactor() *redact.Redactor { return s.cur.Load() }

// Text redacts content (answers, diffs, progress, paths) at the precise level.
func (s *secrets) Text(v string) string { return s.cur.Load().Text(v) }

// String redacts diagnostics (messages, warnings, tails) at the thorough level.
func (s *secrets) String(v string) string { return s.cur.Load().String(v) }

// NewTail is a streaming tail with what is known when the attempt starts; redactResult redacts
// the kept tail again with everything learned by the end of the call.
func (s *secrets) NewTail(n int) *redact.Tail { return s.cur.Load().NewTail(n) }

// redactResult returns res with every string in it — every field, nested in reports, slices, maps
// (keys too) and pointers — redacted by r: at the thorough level where the field is tagged
// `redact:"diagnostic"` (messages, warnings, tails, git errors), at the precise level everywhere
// else (the answer, the diff, file paths, ref names, the worktree path, the undo hint), so code and
// paths come back exact unless they hold a secret. It walks the types by reflection, so a field
// added to Result is redacted without anyone remembering to; a kind it cannot copy panics
// (TestRedactResultCoversEveryField plants a secret in every string the type can hold). The result
// shares no memory with res.
func redactResult(res Result, r *redact.Redactor) Result {
	return redactValue(reflect.ValueOf(res), redact.Precise, r).Interface().(Result)
}

func redactValue(v reflect.Value, lv redact.Level, r *redact.Redactor) reflect.Value {
	t := v.Type()
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if lv == redact.Diagnostic {
			s = r.String(s)
		} else {
			s = r.Text(s)
		}
		return reflect.ValueOf(s).Convert(t)
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return v
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(redactValue(v.Elem(), lv, r))
		return p
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(redactValue(v.Index(i), lv, r))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		it := v.MapRange()
		for it.Next() {
			k := redactValue(it.Key(), lv, r)
			// Two keys redacted alike (two refs named after secrets) both stay.
			for n := 2; out.MapIndex(k).IsValid() && k.Kind() == reflect.String; n++ {
				k = reflect.ValueOf(fmt.Sprintf("%s (%d)", redactValue(it.Key(), lv, r).String(), n)).Convert(t.Key())
			}
			out.SetMapIndex(k, redactValue(it.Value(), lv, r))
		}
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		for i := range t.NumField() {
			flv := lv
			if t.Field(i).Tag.Get("redact") == "diagnostic" {
				flv = redact.Diagnostic
			}
			out.Field(i).Set(redactValue(v.Field(i), flv, r))
		}
		return out
	default:
		panic(fmt.Sprintf("run: redactResult cannot copy a %s (%s)", v.Kind(), t))
	}
}
