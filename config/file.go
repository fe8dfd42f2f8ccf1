package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// MaxFileBytes bounds a configuration file: a larger one is refused before it is parsed.
const MaxFileBytes = 1 << 20

// EnvFile names the configuration file when --config-file does not ("none": no file).
const EnvFile = "CLINE_MCP_CONFIG"

// A File is a parsed configuration file: each key's values as its flag would take them.
type File struct {
	Path   string
	values map[string][]string // key name → values (more than one for a Repeated key)
}

// Names are the keys the file sets, in the order of Keys.
func (f *File) Names() []string {
	var out []string
	for _, k := range Keys {
		if _, ok := f.values[k.Name]; ok {
			out = append(out, k.Name)
		}
	}
	return out
}

// Values are what the file gives key (nil when it does not set it).
func (f *File) Values(key string) []string { return f.values[key] }

// DefaultPath is the user's configuration file: <user config dir>/cline-mcp/config.toml
// ($XDG_CONFIG_HOME or ~/.config on Linux, ~/Library/Application Support on macOS, %AppData% on
// Windows); "" when the system names no such directory.
func DefaultPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "cline-mcp", "config.toml")
}

// Locate decides which file to read: the flag's value, else the environment's, else the default
// (whose absence is not an error: explicit says whether a missing file is one). "none" reads none.
func Locate(flagValue, envValue string) (path string, explicit bool) {
	switch {
	case flagValue != "":
		path, explicit = flagValue, true
	case envValue != "":
		path, explicit = envValue, true
	default:
		path = DefaultPath()
	}
	if path == "none" {
		return "", false
	}
	return path, explicit
}

// ErrNoFile is Load's answer for a file that does not exist.
var ErrNoFile = errors.New("no configuration file")

// Load reads and parses the file at path. It opens it without blocking and reads it only when
// it is a regular file of at most MaxFileBytes (a FIFO, device or directory named by mistake is
// refused at once); a key it does not know, or a value of the wrong kind, is an error naming it.
func Load(path string) (*File, error) {
	b, err := readRegular(path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoFile, path)
	}
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// Parse reads a configuration file's text.
func Parse(b []byte) (*File, error) {
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	known := map[string]Key{}
	for _, k := range Keys {
		known[k.Name] = k
	}
	f := &File{values: map[string][]string{}}
	var unknown []string
	for section, v := range doc {
		table, ok := v.(map[string]any)
		if !ok {
			unknown = append(unknown, section)
			continue
		}
		for name, v := range table {
			key, ok := known[section+"."+name]
			if !ok {
				unknown = append(unknown, section+"."+name)
				continue
			}
			vals, err := valuesOf(key, v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key.Name, err)
			}
			f.values[key.Name] = vals
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown key %s (the keys are in docs/configuration.md)", strings.Join(unknown, ", "))
	}
	return f, nil
}

// valuesOf turns a TOML value into the flag's text: strings as they are, numbers and booleans
// formatted, an array (only for a Repeated key) element by element.
func valuesOf(k Key, v any) ([]string, error) {
	if arr, ok := v.([]any); ok {
		if !k.Repeated {
			return nil, errors.New("takes one value, not an array")
		}
		out := make([]string, 0, len(arr))
		for _, e := range arr {
			s, err := scalar(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	if k.Repeated {
		return nil, errors.New(`takes an array, e.g. ["a", "b"]`)
	}
	s, err := scalar(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", errors.New("not a finite number")
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case time.Duration:
		return x.String(), nil
	}
	return "", fmt.Errorf("a %T is not a value this key takes (a string, number or boolean)", v)
}

// readRegular reads a regular file of at most limit bytes: opened without blocking (a FIFO never
// hangs the open), checked on the open descriptor, read with the limit enforced on the bytes.
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}
