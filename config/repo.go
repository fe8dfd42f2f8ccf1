package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// RepoFileName is the optional file at a repository's top that tightens what the server allows
// for the calls in that repository. It may only tighten: anything it would loosen is an error.
const RepoFileName = ".cline-mcp.toml"

// maxRepoFileBytes bounds a repository's file (it is read for every call in the repository).
const maxRepoFileBytes = 64 << 10

// repoKeys are the keys a repository's file may set: floors and ceilings, never grants.
var repoKeys = []string{"isolation.floor", EgressMode, EgressAllow, "limits.max-cost-usd", "limits.max-iterations"}

// A Policy is what a repository asks of the calls in it. The zero Policy asks nothing.
type Policy struct {
	Path          string   // the file it came from
	Floor         string   // "", "docker" or "kubernetes": the least isolation of every call
	Egress        string   // "", "provider" or "none": at most this egress
	Allow         []string // with AllowSet: only these of the server's --egress-allow endpoints
	AllowSet      bool
	MaxCostUSD    float64 // 0: no ceiling of its own
	MaxIterations int     // 0: no ceiling of its own
}

// ReadRepoPolicy reads RepoFileName at the repository top root (an os.Root, so the name cannot
// lead out of it): a regular file only (a link, FIFO or directory of that name is refused
// without blocking), at most 64 KiB. A repository without the file asks nothing.
func ReadRepoPolicy(root *os.Root) (Policy, error) {
	st, err := root.Lstat(RepoFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return Policy{}, nil
	}
	if err != nil {
		return Policy{}, fmt.Errorf("%s: %w", RepoFileName, err)
	}
	if !st.Mode().IsRegular() {
		return Policy{}, fmt.Errorf("%s is not a regular file (%s)", RepoFileName, st.Mode().Type())
	}
	f, err := root.OpenFile(RepoFileName, os.O_RDONLY|oNonBlock, 0)
	if err != nil {
		return Policy{}, fmt.Errorf("%s: %w", RepoFileName, err)
	}
	defer f.Close()
	if st2, err := f.Stat(); err != nil || !os.SameFile(st, st2) {
		return Policy{}, fmt.Errorf("%s changed while it was read", RepoFileName)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRepoFileBytes+1))
	if err != nil {
		return Policy{}, fmt.Errorf("%s: %w", RepoFileName, err)
	}
	if len(b) > maxRepoFileBytes {
		return Policy{}, fmt.Errorf("%s is larger than %d bytes", RepoFileName, maxRepoFileBytes)
	}
	p, err := ParsePolicy(b)
	if err != nil {
		return Policy{}, fmt.Errorf("%s: %w", RepoFileName, err)
	}
	p.Path = RepoFileName
	return p, nil
}

// ParsePolicy reads a repository file's text: only the keys that tighten (repoKeys), each with
// a value that tightens.
func ParsePolicy(b []byte) (Policy, error) {
	f, err := Parse(b)
	if err != nil {
		return Policy{}, err
	}
	var p Policy
	var refused []string
	for _, name := range f.Names() {
		if !slices.Contains(repoKeys, name) {
			refused = append(refused, name)
			continue
		}
		if err := p.set(name, f.values[name]); err != nil {
			return Policy{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return Policy{}, fmt.Errorf("a repository's file may only tighten (%s); %s is a setting of the server's own file", strings.Join(repoKeys, ", "), strings.Join(refused, ", "))
	}
	return p, nil
}

func (p *Policy) set(name string, vals []string) error {
	v := vals[0]
	switch name {
	case "isolation.floor":
		if v != "host" && v != "docker" && v != "kubernetes" {
			return fmt.Errorf("%q: want host, docker or kubernetes", v)
		}
		if v != "host" {
			p.Floor = v
		}
	case EgressMode:
		if v != "provider" && v != "none" {
			return fmt.Errorf("%q: a repository may ask for provider or none, never open", v)
		}
		p.Egress = v
	case EgressAllow:
		p.Allow, p.AllowSet = vals, true
	case "limits.max-cost-usd":
		c, err := strconv.ParseFloat(v, 64)
		if err != nil || !(c > 0) || math.IsInf(c, 0) {
			return fmt.Errorf("%q: want a positive number of US dollars", v)
		}
		p.MaxCostUSD = c
	case "limits.max-iterations":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%q: want a positive integer", v)
		}
		p.MaxIterations = n
	}
	return nil
}

// FloorOf is the stricter of two isolations ("" and host are the least).
func FloorOf(a, b string) string {
	rank := map[string]int{"": 0, "host": 0, "docker": 1, "kubernetes": 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// AllowWithin keeps of the server's allowed endpoints those the policy names (all of them when it
// names none), and reports the policy's entries the server does not allow (they are not granted).
func (p Policy) AllowWithin(server []string) (kept, refused []string) {
	if !p.AllowSet {
		return server, nil
	}
	for _, a := range p.Allow {
		if slices.Contains(server, a) {
			kept = append(kept, a)
		} else {
			refused = append(refused, a)
		}
	}
	return kept, refused
}

// Ceiling is the lower of two limits, 0 meaning none.
func Ceiling[T int | float64](server, repo T) T {
	if repo > 0 && (server == 0 || repo < server) {
		return repo
	}
	return server
}
