package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// The fake image (images/fake-cline) has no shell of its own: /bin/bash and /bin/sh are copies of
// this binary, which acts as a small POSIX shell when it is started under one of those names.
// The real CLI runs every run_commands command as `/bin/bash -c <command>` and its machine id as
// `/bin/sh -c "( cat … || hostname ) | head -n 1 || :"`; the fake does the same, so an image
// without them fails the same way. The shell is mvdan.cc/sh's interpreter; the few programs a
// scratch image lacks (cat, head, hostname, touch, rm, mkdir, mv, cp, ls) are built in, anything
// else is looked up on PATH (git in images that add it).

// shellNames are the argv[0] base names that select the shell.
var shellNames = map[string]bool{"bash": true, "sh": true}

// isShell reports whether this process was started as a shell.
func isShell(argv0 string) bool { return shellNames[filepath.Base(argv0)] }

// shellMain is `bash -c <script> [$0 [args…]]` or `bash` with the script on stdin. Options before
// -c (-e, -l, …) are accepted and ignored.
func shellMain(argv []string) int {
	name, args := argv[0], argv[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-c" && args[0] != "--" {
		args = args[1:]
	}
	var script string
	if len(args) > 0 && args[0] == "-c" {
		if len(args) < 2 {
			fmt.Fprintf(os.Stderr, "%s: -c: option requires an argument\n", name)
			return 2
		}
		script = args[1]
	} else {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return 2
		}
		script = string(b)
	}
	dir, _ := os.Getwd()
	return runScript(context.Background(), name, script, dir, os.Environ(), os.Stdin, os.Stdout, os.Stderr)
}

// runScript interprets script like `<name> -c script` in dir and returns its exit status. Error
// messages follow bash's form ("<name>: line 1: x: command not found", status 127).
func runScript(ctx context.Context, name, script, dir string, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	file, err := syntax.NewParser().Parse(strings.NewReader(script), name)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	r, err := interp.New(
		interp.StdIO(stdin, stdout, stderr),
		interp.Env(expand.ListEnviron(env...)),
		interp.Dir(dir),
		interp.ExecHandlers(builtins(name)),
	)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	err = r.Run(ctx, file)
	if code, ok := interp.IsExitStatus(err); ok {
		return int(code)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// builtins runs the programs a scratch image lacks in process and everything else from PATH.
func builtins(shell string) func(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
		return func(ctx context.Context, args []string) error {
			hc := interp.HandlerCtx(ctx)
			if fn, ok := programs[args[0]]; ok {
				if err := fn(hc, args[1:]); err != nil {
					fmt.Fprintf(hc.Stderr, "%s: %v\n", args[0], err)
					var se statusError
					if errors.As(err, &se) {
						return interp.ExitStatus(se.status)
					}
					return interp.ExitStatus(1)
				}
				return nil
			}
			if _, err := interp.LookPathDir(hc.Dir, hc.Env, args[0]); err != nil {
				fmt.Fprintf(hc.Stderr, "%s: line %d: %s: command not found\n", shell, max(hc.Pos.Line(), 1), args[0])
				return interp.ExitStatus(127)
			}
			return next(ctx, args)
		}
	}
}

type program func(hc interp.HandlerContext, args []string) error

// statusError is a program failure with an exit status other than 1 (ls: 2 for a path it
// cannot access, like coreutils).
type statusError struct {
	status uint8
	err    error
}

func (e statusError) Error() string { return e.err.Error() }

var programs = map[string]program{
	"cat":      progCat,
	"head":     progHead,
	"hostname": progHostname,
	"touch":    progTouch,
	"rm":       progRm,
	"mkdir":    progMkdir,
	"mv":       progMv,
	"cp":       progCp,
	"ls":       progLs,
}

// operands splits args into flags and paths made absolute against the shell's directory.
func operands(hc interp.HandlerContext, args []string) (flags, paths []string) {
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
		case filepath.IsAbs(a) || a == "-":
			paths = append(paths, a)
		default:
			paths = append(paths, filepath.Join(hc.Dir, a))
		}
	}
	return flags, paths
}

func progCat(hc interp.HandlerContext, args []string) error {
	_, paths := operands(hc, args)
	if len(paths) == 0 {
		paths = []string{"-"}
	}
	var firstErr error
	for _, p := range paths {
		if p == "-" {
			_, _ = io.Copy(hc.Stdout, hc.Stdin)
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			if firstErr == nil {
				firstErr = pathError(err)
			}
			continue
		}
		_, _ = hc.Stdout.Write(b)
	}
	return firstErr
}

// progHead prints the first -n N (default 10) lines of stdin or the files.
func progHead(hc interp.HandlerContext, args []string) error {
	n := 10
	var files []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-n" && i+1 < len(args):
			i++
			v, err := strconv.Atoi(args[i])
			if err != nil {
				return fmt.Errorf("invalid number of lines: %q", args[i])
			}
			n = v
		case strings.HasPrefix(a, "-n"):
			v, err := strconv.Atoi(a[2:])
			if err != nil {
				return fmt.Errorf("invalid number of lines: %q", a[2:])
			}
			n = v
		default:
			files = append(files, a)
		}
	}
	in := hc.Stdin
	if len(files) > 0 {
		p := files[0]
		if !filepath.IsAbs(p) {
			p = filepath.Join(hc.Dir, p)
		}
		f, err := os.Open(p)
		if err != nil {
			return pathError(err)
		}
		defer f.Close()
		in = f
	}
	br := bufio.NewReader(in)
	for i := 0; i < n; i++ {
		line, err := br.ReadString('\n')
		_, _ = io.WriteString(hc.Stdout, line)
		if err != nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, br) // like head in a pipe: the writer never sees EPIPE
	return nil
}

func progHostname(hc interp.HandlerContext, _ []string) error {
	h, err := os.Hostname()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(hc.Stdout, h)
	return err
}

func progTouch(hc interp.HandlerContext, args []string) error {
	_, paths := operands(hc, args)
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("cannot touch '%s': %w", p, pathError(err))
		}
		_ = f.Close()
		now := time.Now()
		_ = os.Chtimes(p, now, now)
	}
	return nil
}

func progRm(hc interp.HandlerContext, args []string) error {
	_, paths := operands(hc, args)
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("cannot remove '%s': %w", p, pathError(err))
		}
	}
	return nil
}

func progMkdir(hc interp.HandlerContext, args []string) error {
	_, paths := operands(hc, args)
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("cannot create directory '%s': %w", p, pathError(err))
		}
	}
	return nil
}

func progMv(hc interp.HandlerContext, args []string) error {
	_, paths := operands(hc, args)
	if len(paths) != 2 {
		return errors.New("expected two paths")
	}
	return pathError(os.Rename(paths[0], paths[1]))
}

func progCp(hc interp.HandlerContext, args []string) error {
	_, paths := operands(hc, args)
	if len(paths) != 2 {
		return errors.New("expected two paths")
	}
	data, err := os.ReadFile(paths[0])
	if err == nil {
		err = os.WriteFile(paths[1], data, 0o644)
	}
	return pathError(err)
}

func progLs(hc interp.HandlerContext, args []string) error {
	_, paths := operands(hc, args)
	dir := hc.Dir
	if len(paths) > 0 {
		dir = paths[0]
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return statusError{2, fmt.Errorf("cannot access '%s': %w", dir, pathError(err))}
	}
	for _, e := range ents {
		fmt.Fprintln(hc.Stdout, e.Name())
	}
	return nil
}

// pathError drops the operation and path of an *os.PathError and capitalises the errno text,
// like coreutils' messages ("No such file or directory").
func pathError(err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	msg := err.Error()
	if msg == "" {
		return err
	}
	return errors.New(strings.ToUpper(msg[:1]) + msg[1:])
}
