package ci

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeGitHub is GitHub's issue-comment API for one repository on loopback: it lists, creates
// and updates comments, records every request, and refuses one without the token.
type fakeGitHub struct {
	srv      *httptest.Server
	repo     string
	token    string
	mu       sync.Mutex
	comments []ghComment
	requests []ghRequest
	nextID   int
}

type ghComment struct {
	ID   int    `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
}

type ghRequest struct {
	Method, Path, Body string
}

func newFakeGitHub(t *testing.T, repo, token string) *fakeGitHub {
	g := &fakeGitHub{repo: repo, token: token, nextID: 1000}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

// add puts a comment there before the run, as someone else may have.
func (g *fakeGitHub) add(login, body string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := ghComment{ID: g.nextID, Body: body}
	c.User.Login = login
	g.nextID++
	g.comments = append(g.comments, c)
}

func (g *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	g.requests = append(g.requests, ghRequest{Method: r.Method, Path: r.URL.RequestURI(), Body: string(body)})
	if r.Header.Get("Authorization") != "Bearer "+g.token || !strings.Contains(r.Header.Get("Accept"), "application/vnd.github+json") {
		http.Error(w, `{"message": "Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	prefix := "/repos/" + g.repo + "/issues/"
	path := r.URL.Path
	var in struct {
		Body *string `json:"body"`
	}
	if r.Method == http.MethodPost || r.Method == http.MethodPatch {
		if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &in) != nil || in.Body == nil {
			http.Error(w, `{"message": "Problems parsing JSON"}`, http.StatusBadRequest)
			return
		}
	}
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(path, prefix) && strings.HasSuffix(path, "/comments"):
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if page < 1 {
			page = 1
		}
		if per < 1 || per > 100 {
			per = 30
		}
		list := []ghComment{}
		for i := (page - 1) * per; i < len(g.comments) && i < page*per; i++ {
			list = append(list, g.comments[i])
		}
		_ = json.NewEncoder(w).Encode(list)
	case r.Method == http.MethodPost && strings.HasPrefix(path, prefix) && strings.HasSuffix(path, "/comments"):
		c := ghComment{ID: g.nextID, Body: *in.Body}
		c.User.Login = "github-actions[bot]"
		g.nextID++
		g.comments = append(g.comments, c)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(c)
	case r.Method == http.MethodPatch && strings.HasPrefix(path, prefix+"comments/"):
		id, _ := strconv.Atoi(strings.TrimPrefix(path, prefix+"comments/"))
		for i := range g.comments {
			if g.comments[i].ID == id {
				if g.comments[i].User.Login != "github-actions[bot]" {
					http.Error(w, `{"message": "Must have admin rights"}`, http.StatusForbidden)
					return
				}
				g.comments[i].Body = *in.Body
				_ = json.NewEncoder(w).Encode(g.comments[i])
				return
			}
		}
		http.Error(w, `{"message": "Not Found"}`, http.StatusNotFound)
	default:
		http.Error(w, fmt.Sprintf(`{"message": "no route %s %s"}`, r.Method, path), http.StatusNotFound)
	}
}

// writes are the POST and PATCH requests so far, as "METHOD path".
func (g *fakeGitHub) writes() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, r := range g.requests {
		if r.Method != http.MethodGet {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// ours is the bot's comments.
func (g *fakeGitHub) ours() []ghComment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []ghComment
	for _, c := range g.comments {
		if c.User.Login == "github-actions[bot]" {
			out = append(out, c)
		}
	}
	return out
}

// all is every comment.
func (g *fakeGitHub) all() []ghComment {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]ghComment(nil), g.comments...)
}
