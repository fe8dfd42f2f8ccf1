package config

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// A Source says where an effective value came from.
type Source struct {
	Kind  string // "flag", "file", "env" or "default"
	Where string // the file's path, the variable's name
}

func (s Source) String() string {
	if s.Where == "" {
		return s.Kind
	}
	return s.Kind + " " + s.Where
}

// Origins maps a flag's name to where its value came from; a flag that is not in it has its
// default.
type Origins map[string]Source

// Apply sets on fs, as if given as flags, the file's values of every flag the command line did
// not set (f may be nil: no file). The [egress] keys set the flags of container, the executor
// the server runs containers on ("docker" or "kubernetes": decided after the file's other keys,
// since the file may set the isolation). It returns where each set flag's value came from.
func Apply(fs *flag.FlagSet, f *File, container func() string) (Origins, error) {
	origins := Origins{}
	fs.Visit(func(fl *flag.Flag) { origins[fl.Name] = Source{Kind: "flag"} })
	if f == nil {
		return origins, nil
	}
	set := func(key, name string) error {
		if _, given := origins[name]; given && origins[name].Kind == "flag" {
			return nil // the command line overrides the file
		}
		if fs.Lookup(name) == nil {
			return nil // a command without this flag (setup, review's own flags aside)
		}
		for _, v := range f.values[key] {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("configuration file %s: %s = %q: %w", f.Path, key, v, err)
			}
		}
		origins[name] = Source{Kind: "file", Where: f.Path}
		return nil
	}
	for _, k := range Keys {
		if k.Flag == "" || f.values[k.Name] == nil {
			continue
		}
		if err := set(k.Name, k.Flag); err != nil {
			return nil, err
		}
	}
	flags := egressFlags[container()]
	for _, key := range []string{EgressMode, EgressAllow, EgressDNS} {
		if f.values[key] == nil {
			continue
		}
		name, ok := flags[key]
		if !ok {
			return nil, fmt.Errorf("configuration file %s: %s applies to Kubernetes runs only (isolation kubernetes)", f.Path, key)
		}
		vals := f.values[key]
		if key == EgressMode && container() == "kubernetes" {
			mode, err := kubernetesMode(vals[0])
			if err != nil {
				return nil, fmt.Errorf("configuration file %s: %s: %w", f.Path, key, err)
			}
			vals = []string{mode}
		}
		saved := f.values[key]
		f.values[key] = vals
		err := set(key, name)
		f.values[key] = saved
		if err != nil {
			return nil, err
		}
	}
	return origins, nil
}

// kubernetesMode is the Kubernetes executor's word for an egress mode of the file: provider and
// none are its NetworkPolicy (which lets through only egress.allow and DNS), open is no policy.
func kubernetesMode(mode string) (string, error) {
	switch mode {
	case "provider", "none":
		return "policy", nil
	case "open":
		return "open", nil
	}
	return "", fmt.Errorf("%q: want provider, none or open", mode)
}

// Print writes every setting of fs that has a key, grouped by the file's sections, as
// "key = value  (source)": what `cline-mcp config` shows. Secrets never reach a flag's value (a
// --docker-env names a variable, not its value), so values are printed as they are.
func Print(w io.Writer, fs *flag.FlagSet, origins Origins, container string) {
	type line struct{ key, value, src string }
	var lines []line
	for _, k := range Keys {
		name := k.Flag
		if name == "" {
			name = egressFlags[container][k.Name]
		}
		fl := fs.Lookup(name)
		if name == "" || fl == nil {
			continue
		}
		src := "default"
		if o, ok := origins[name]; ok {
			src = o.String()
		}
		lines = append(lines, line{k.Name, tomlValue(fl.Value, k.Repeated), src + ", --" + name})
	}
	section := ""
	width := 0
	for _, l := range lines {
		width = max(width, len(l.key)+3+len(l.value))
	}
	for _, l := range lines {
		s, _, _ := strings.Cut(l.key, ".")
		if s != section {
			if section != "" {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "[%s]\n", s)
			section = s
		}
		kv := strings.TrimPrefix(l.key, s+".") + " = " + l.value
		fmt.Fprintf(w, "%-*s  # %s\n", width, kv, l.src)
	}
}

// tomlValue is a flag's value as the file would write it: numbers and booleans bare, durations
// and strings quoted, a repeated flag's values as an array.
func tomlValue(v flag.Value, repeated bool) string {
	if repeated {
		var items []string
		if s := v.String(); s != "" {
			for _, e := range strings.Split(s, ",") {
				items = append(items, fmt.Sprintf("%q", e))
			}
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	if g, ok := v.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool, int, int64, uint, uint64, float64:
			return v.String()
		}
	}
	return fmt.Sprintf("%q", v.String())
}

// Unset lists the flags of fs that have no key (their value is set only on the command line).
func Unset(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(fl *flag.Flag) {
		if _, ok := KeyOf(fl.Name); !ok && fl.Name != FileFlag {
			out = append(out, fl.Name)
		}
	})
	sort.Strings(out)
	return out
}
