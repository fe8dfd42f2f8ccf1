// Command probe is the test program of the sandbox/docker e2e tests: a static binary in a
// scratch image that runs a list of steps given as arguments and reports what the sandbox let it
// do. Every step prints one line, so a test can tell "refused" from "never ran".
//
//	out TEXT | err TEXT        print TEXT and a newline to stdout / stderr
//	exit N                     exit with status N
//	sleep DURATION             sleep (Go duration)
//	kill-self N                send signal N to itself
//	alloc N                    allocate and touch N MiB
//	ignore-signals             ignore SIGINT and SIGTERM
//	exit-on-int N              exit N when SIGINT arrives (also while sleeping)
//	write PATH TEXT            create PATH with TEXT: "write PATH ok" or "write PATH error: ..."
//	read PATH                  "read PATH ok: <content>" or "read PATH error: ..."
//	stat PATH                  "stat PATH exists" or "stat PATH missing"
//	waitfile PATH              block until PATH exists
//	id                         "uid=U gid=G"
//	pwd | env                  the working directory / every environment entry, one a line
//	caps                       "CapEff=<hex>" from /proc/self/status
//	spawn N                    start N children that sleep: "spawned K" and on failure "spawn error: ..."
//	connect ADDR               TCP dial with a 3 s timeout: "connect ok" or "connect error: ..."
//	proxy TARGET               CONNECT TARGET through $HTTPS_PROXY: "proxy TARGET <status line>" or "proxy TARGET error: ..."
//	ifaces                     "ifaces [<address/prefix> ...]"
//	stdin                      read stdin to EOF: "stdin N bytes"
//	rm PATH | mkdir PATH       remove (recursively) / create a directory: "<step> PATH ok|error: ..."
//	symlink TARGET PATH        create a symbolic link; link OLD NEW: a hard link; mkfifo PATH
//	chmod PATH OCTAL           change the permission bits
//	child-sleep                (internal) sleep until killed
package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "child-sleep" {
		time.Sleep(time.Hour)
		return
	}
	var intExit chan os.Signal
	intCode := 0
	next := func() string {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, "probe: missing argument")
			os.Exit(2)
		}
		a := args[0]
		args = args[1:]
		return a
	}
	for len(args) > 0 {
		switch step := next(); step {
		case "out":
			fmt.Fprintln(os.Stdout, next())
		case "err":
			fmt.Fprintln(os.Stderr, next())
		case "exit":
			os.Exit(atoi(next()))
		case "sleep":
			d, err := time.ParseDuration(next())
			if err != nil {
				fmt.Fprintln(os.Stderr, "probe:", err)
				os.Exit(2)
			}
			select {
			case <-time.After(d):
			case <-intExit:
				os.Exit(intCode)
			}
		case "kill-self":
			_ = syscall.Kill(os.Getpid(), syscall.Signal(atoi(next())))
			time.Sleep(time.Minute)
		case "alloc":
			n := atoi(next())
			var keep [][]byte
			for i := 0; i < n; i++ {
				b := make([]byte, 1<<20)
				for j := range b {
					b[j] = byte(i + j)
				}
				keep = append(keep, b)
			}
			fmt.Printf("allocated %d MiB\n", len(keep))
		case "ignore-signals":
			signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		case "exit-on-int":
			intCode = atoi(next())
			intExit = make(chan os.Signal, 1)
			signal.Notify(intExit, syscall.SIGINT)
		case "write":
			p, text := next(), next()
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				fmt.Printf("write %s error: %v\n", p, err)
			} else {
				fmt.Printf("write %s ok\n", p)
			}
		case "read":
			p := next()
			b, err := os.ReadFile(p)
			if err != nil {
				fmt.Printf("read %s error: %v\n", p, err)
			} else {
				fmt.Printf("read %s ok: %s\n", p, b)
			}
		case "stat":
			p := next()
			if _, err := os.Lstat(p); err != nil {
				fmt.Printf("stat %s missing\n", p)
			} else {
				fmt.Printf("stat %s exists\n", p)
			}
		case "waitfile":
			p := next()
			for {
				if _, err := os.Stat(p); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		case "id":
			fmt.Printf("uid=%d gid=%d\n", os.Getuid(), os.Getgid())
		case "pwd":
			wd, err := os.Getwd()
			fmt.Printf("pwd %s %v\n", wd, err)
		case "env":
			for _, kv := range os.Environ() {
				fmt.Println("env " + kv)
			}
		case "caps":
			b, _ := os.ReadFile("/proc/self/status")
			for line := range strings.Lines(string(b)) {
				if strings.HasPrefix(line, "CapEff:") {
					fmt.Println("CapEff=" + strings.TrimSpace(strings.TrimPrefix(line, "CapEff:")))
				}
			}
		case "spawn":
			spawn(atoi(next()))
		case "connect":
			addr := next()
			c, err := net.DialTimeout("tcp", addr, 3*time.Second)
			if err != nil {
				fmt.Printf("connect error: %v\n", err)
			} else {
				c.Close()
				fmt.Println("connect ok")
			}
		case "proxy":
			proxyConnect(next())
		case "ifaces":
			as, err := net.InterfaceAddrs()
			fmt.Printf("ifaces %v %v\n", as, err)
		case "stdin":
			n, err := io.Copy(io.Discard, os.Stdin)
			fmt.Printf("stdin %d bytes %v\n", n, err)
		case "rm":
			p := next()
			report(step, p, os.RemoveAll(p))
		case "mkdir":
			p := next()
			report(step, p, os.MkdirAll(p, 0o755))
		case "symlink":
			target, p := next(), next()
			report(step, p, os.Symlink(target, p))
		case "link":
			old, p := next(), next()
			report(step, p, os.Link(old, p))
		case "rename":
			old, p := next(), next()
			report(step, p, os.Rename(old, p))
		case "mkfifo":
			p := next()
			report(step, p, syscall.Mkfifo(p, 0o644))
		case "chmod":
			p := next()
			m, err := strconv.ParseUint(next(), 8, 32)
			if err == nil {
				err = os.Chmod(p, os.FileMode(m))
			}
			report(step, p, err)
		default:
			fmt.Fprintf(os.Stderr, "probe: unknown step %q\n", step)
			os.Exit(2)
		}
	}
}

func spawn(n int) {
	var procs []*os.Process
	defer func() {
		for _, p := range procs {
			_ = p.Kill()
			_, _ = p.Wait()
		}
	}()
	for i := 0; i < n; i++ {
		p, err := os.StartProcess("/proc/self/exe", []string{"probe", "child-sleep"}, &os.ProcAttr{})
		if err != nil {
			fmt.Printf("spawned %d\nspawn error: %v\n", len(procs), err)
			return
		}
		procs = append(procs, p)
	}
	fmt.Printf("spawned %d\n", len(procs))
}

func report(step, p string, err error) {
	if err != nil {
		fmt.Printf("%s %s error: %v\n", step, p, err)
	} else {
		fmt.Printf("%s %s ok\n", step, p)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(2)
	}
	return n
}

// proxyConnect sends CONNECT target to the proxy of $HTTPS_PROXY with its credentials.
func proxyConnect(target string) {
	p := os.Getenv("HTTPS_PROXY")
	auth, host, ok := strings.Cut(strings.TrimPrefix(p, "http://"), "@")
	if !ok {
		host, auth = auth, ""
	}
	c, err := net.DialTimeout("tcp", strings.TrimSuffix(host, "/"), 3*time.Second)
	if err != nil {
		fmt.Printf("proxy %s error: %v\n", target, err)
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", target, target, base64.StdEncoding.EncodeToString([]byte(auth)))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Printf("proxy %s error: %v\n", target, err)
		return
	}
	fmt.Printf("proxy %s %s\n", target, strings.TrimSpace(line))
}
