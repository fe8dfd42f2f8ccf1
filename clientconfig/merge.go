package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// Entry is the server entry a merge writes: the command and its arguments.
type Entry struct {
	Command string
	Args    []string
}

// Result is what Merge did.
type Result struct {
	Content   []byte // the file's new content
	Unchanged bool   // the file already held exactly this entry
	Backup    string // the backup of the previous file, when there was one
}

// EntryValue is the entry as the client's format has it.
func EntryValue(client Client, e Entry) map[string]any {
	args := e.Args
	if args == nil {
		args = []string{}
	}
	v := map[string]any{"command": e.Command, "args": args}
	if client.Typed {
		v["type"] = "stdio"
	}
	if client.Format == "toml" {
		v["tool_timeout_sec"] = int64(CodexToolTimeoutSec)
		tools := map[string]any{}
		for _, t := range CodexApprovedTools {
			tools[t] = map[string]any{"approval_mode": "approve"}
		}
		v["tools"] = tools
	}
	return v
}

// Print is the entry name as a snippet of the client's file; it touches nothing.
func Print(client Client, name string, e Entry) ([]byte, error) {
	return mergeContent(client, nil, name, e)
}

// Merge merges the entry name into the client's file at path: it reads the file (readFile: a
// symlink is followed, anything but a regular file of at most 32 MiB is refused without
// blocking), refuses one it cannot parse, proves that nothing but the entry changed, keeps a
// backup and replaces the file atomically.
func Merge(client Client, path, name string, e Entry) (Result, error) {
	path, old, mode, err := readFile(path)
	if err != nil {
		return Result{}, err
	}
	content, err := mergeContent(client, old, name, e)
	if err != nil {
		return Result{}, err
	}
	if old != nil && bytes.Equal(content, old) {
		return Result{Content: content, Unchanged: true}, nil
	}
	res := Result{Content: content}
	if old != nil {
		res.Backup = fmt.Sprintf("%s.%s.bak", path, time.Now().UTC().Format("20060102T150405Z"))
		if err := writeNew(res.Backup, old, mode); err != nil {
			return Result{}, fmt.Errorf("backup: %w", err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Result{}, err
	}
	return res, writeAtomic(path, content, mode)
}

// mergeContent is old with the entry name merged in, checked: both parse, and they differ in that
// entry only. old == nil is a new file.
func mergeContent(client Client, old []byte, name string, e Entry) ([]byte, error) {
	want := EntryValue(client, e)
	var merged []byte
	var err error
	if client.Format == "toml" {
		merged, err = mergeTOML(old, client.Key, name, want)
	} else {
		merged, err = mergeJSON(old, client.Key, name, want)
	}
	if err != nil {
		return nil, err
	}
	if err := sameButEntry(client.Format, old, merged, client.Key, name, want); err != nil {
		return nil, err
	}
	return merged, nil
}

// mergeJSON sets key.name in a JSON (or JSON with comments, as VS Code writes) document, keeping
// every other member, comment and the order of members.
func mergeJSON(old []byte, key, name string, want map[string]any) ([]byte, error) {
	fresh := len(bytes.TrimSpace(old)) == 0
	if fresh {
		old = []byte("{}")
	}
	v, err := hujson.Parse(bytes.Clone(old)) // Parse aliases its input and Format edits in place
	if err != nil {
		return nil, fmt.Errorf("not valid JSON, refusing to change it (fix or move it, then run setup again): %w", err)
	}
	if _, ok := v.Value.(*hujson.Object); !ok {
		return nil, fmt.Errorf("not a JSON object, refusing to change it")
	}
	parent := v.Find("/" + key)
	if parent == nil {
		if err := v.Patch([]byte(`[{"op":"add","path":"/` + key + `","value":{}}]`)); err != nil {
			return nil, err
		}
	} else if _, ok := parent.Value.(*hujson.Object); !ok {
		return nil, fmt.Errorf("%q is not a JSON object, refusing to change it", key)
	}
	entry, err := json.Marshal(jsonEntry{Type: stringOr(want["type"]), Command: want["command"].(string), Args: want["args"].([]string)})
	if err != nil {
		return nil, err
	}
	patch := fmt.Sprintf(`[{"op":"add","path":"/%s/%s","value":%s}]`, key, name, entry)
	if existing := v.Find("/" + key + "/" + name); existing != nil {
		if _, ok := existing.Value.(*hujson.Object); !ok {
			return nil, fmt.Errorf("%s.%s is not a JSON object, refusing to change it", key, name)
		}
		// keep what the user added to the entry (env, cwd, …): set only the fields setup owns
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(entry, &fields)
		var ops []string
		for _, f := range []string{"type", "command", "args"} {
			if raw, ok := fields[f]; ok {
				ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/%s/%s/%s","value":%s}`, key, name, f, raw))
			}
		}
		patch = "[" + strings.Join(ops, ",") + "]"
	}
	if err := v.Patch([]byte(patch)); err != nil {
		return nil, err
	}
	if fresh { // a new file: one member a line, as the clients write theirs
		var m map[string]map[string]jsonEntry
		if err := json.Unmarshal(v.Pack(), &m); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(m, "", "  ")
		return append(b, '\n'), err
	}
	v.Format()
	return v.Pack(), nil
}

// jsonEntry orders an entry's members as people write them.
type jsonEntry struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}

// mergeTOML sets the keys setup owns in the table key.name (command, args, tool_timeout_sec) and
// the approval of CodexApprovedTools, keeping every other key, sub-table (env, …), comment and
// byte of the file: the table's own header and owned keys are removed where they stand and the
// table is written again at the end with the user's other keys of it.
func mergeTOML(old []byte, key, name string, want map[string]any) ([]byte, error) {
	var probe map[string]any
	if err := toml.Unmarshal(old, &probe); err != nil {
		return nil, fmt.Errorf("not valid TOML, refusing to change it (fix or move it, then run setup again): %w", err)
	}
	table := `^\s*\[\s*` + regexp.QuoteMeta(key) + `\s*\.\s*"?` + regexp.QuoteMeta(name) + `"?\s*`
	mainHeader := regexp.MustCompile(table + `\]\s*(#.*)?$`)
	var approved []string
	for _, t := range CodexApprovedTools {
		approved = append(approved, regexp.QuoteMeta(t))
	}
	toolHeader := regexp.MustCompile(table + `\.\s*tools\s*\.\s*"?(` + strings.Join(approved, "|") + `)"?\s*\]\s*(#.*)?$`)
	owned := regexp.MustCompile(`^\s*(command|args|tool_timeout_sec)\s*=`)
	var kept, mine []string
	section, inArray := "", false // section: "" elsewhere, "main" or "tool"
	for _, line := range strings.SplitAfter(string(old), "\n") {
		bare := strings.TrimRight(line, "\r\n")
		switch {
		case inArray:
			inArray = !strings.Contains(bare, "]")
			continue
		case strings.HasPrefix(strings.TrimSpace(bare), "["):
			switch {
			case mainHeader.MatchString(bare):
				section = "main"
				continue
			case toolHeader.MatchString(bare):
				section = "tool"
				continue
			default:
				section = ""
			}
		case section == "main" && owned.MatchString(bare):
			inArray = strings.Contains(bare, "[") && !strings.Contains(bare, "]")
			continue
		}
		switch section {
		case "main":
			if strings.TrimSpace(bare) != "" {
				mine = append(mine, strings.TrimRight(bare, "\r")+"\n")
			}
		case "tool":
		default:
			kept = append(kept, line)
		}
	}
	out := strings.TrimRight(strings.Join(kept, ""), "\n")
	if out != "" {
		out += "\n\n"
	}
	return []byte(out + tomlEntry(key, name, want, strings.Join(mine, ""))), nil
}

// tomlEntry writes the entry as TOML tables. JSON's string escapes are all valid in TOML basic
// strings.
func tomlEntry(key, name string, want map[string]any, extra string) string {
	q := func(v any) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		return strings.TrimSpace(b.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s.%s]\n", key, name)
	fmt.Fprintf(&b, "command = %s\n", q(want["command"]))
	var args []string
	for _, a := range want["args"].([]string) {
		args = append(args, q(a))
	}
	fmt.Fprintf(&b, "args = [%s]\n", strings.Join(args, ", "))
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", want["tool_timeout_sec"])
	b.WriteString(extra)
	for _, t := range CodexApprovedTools {
		fmt.Fprintf(&b, "\n[%s.%s.tools.%s]\napproval_mode = \"approve\"\n", key, name, t)
	}
	return b.String()
}

// sameButEntry proves that merged holds want's fields in key.name and that old and merged agree on
// everything else; a merge that would change anything else is refused.
func sameButEntry(format string, old, merged []byte, key, name string, want map[string]any) error {
	decode := func(b []byte) (map[string]any, error) {
		m := map[string]any{}
		if len(bytes.TrimSpace(b)) == 0 {
			return m, nil
		}
		if format == "toml" {
			return m, toml.Unmarshal(b, &m)
		}
		std, err := hujson.Standardize(bytes.Clone(b))
		if err != nil {
			return nil, err
		}
		return m, json.Unmarshal(std, &m)
	}
	before, err := decode(old)
	if err != nil {
		return err
	}
	after, err := decode(merged)
	if err != nil {
		return fmt.Errorf("the merged file does not parse (is %s.%s defined in an unusual way? edit it by hand): %w", key, name, err)
	}
	got := TakeEntry(after, key, name, want)
	TakeEntry(before, key, name, want)
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		return fmt.Errorf("the merged file holds %v as %s.%s, not %v: edit it by hand", got, key, name, want)
	}
	if !reflect.DeepEqual(before, after) {
		return fmt.Errorf("merging would change more than %s.%s: refusing (edit it by hand)", key, name)
	}
	return nil
}

// TakeEntry removes from m, a decoded client file, the fields of the entry key.name that want
// (an EntryValue) has, recursively for objects, and returns them; whatever it empties is removed
// too. What is left of m is the rest of the file, which a merge must not change.
func TakeEntry(m map[string]any, key, name string, want map[string]any) any {
	servers, ok := m[key].(map[string]any)
	if !ok {
		return nil
	}
	entry, ok := servers[name].(map[string]any)
	if !ok {
		if len(servers) == 0 {
			delete(m, key) // an empty table: the merged file drops it the same way
		}
		return servers[name]
	}
	got := take(entry, want)
	if len(entry) == 0 {
		delete(servers, name)
	}
	if len(servers) == 0 {
		delete(m, key)
	}
	return got
}

// take moves the fields of want out of m (into the result), descending into objects.
func take(m map[string]any, want map[string]any) map[string]any {
	got := map[string]any{}
	for k, w := range want {
		v, ok := m[k]
		if !ok {
			continue
		}
		wm, wIsMap := w.(map[string]any)
		vm, vIsMap := v.(map[string]any)
		if wIsMap && vIsMap {
			got[k] = take(vm, wm)
			if len(vm) == 0 {
				delete(m, k)
			}
			continue
		}
		got[k] = v
		delete(m, k)
	}
	return got
}

// normalize makes decoded and built values comparable: through JSON, numbers as float64.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// writeNew creates path with data; it never replaces an existing file.
func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeAtomic replaces path with data through a temporary file in the same directory and a rename,
// so a reader sees the old file or the new one, never a part.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
