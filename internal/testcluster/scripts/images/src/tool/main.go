// tool: multi-call test binary for a FROM-scratch image.
//
//	tool print N      print N numbered lines (0.2 s apart) then exit 0
//	tool sleep SECS   sleep (0 = forever), exit 0 on SIGTERM
//	tool cat          copy stdin to stdout, then print "stdin closed"
//	tool echo ARGS    print ARGS
//	tool listen :PORT serve TCP on PORT: each connection gets "hello from $HOSTNAME\n"; exit 0 on SIGTERM
//	tool dial ADDR TIMEOUT   one TCP connection to ADDR (host:port) within TIMEOUT (a Go duration):
//	                  print "connected: <first line>" and exit 0, or "dial failed: <error>" and exit 1
//	tool probe ADDR EVERY TIMEOUT  dial ADDR every EVERY (Go durations) forever, one line per attempt:
//	                  "<unix ms> ok" or "<unix ms> fail <error>"
package main

import (
	"bufio"
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
	if len(os.Args) < 2 {
		fmt.Println("usage: tool print|sleep|cat|echo|listen|dial|probe ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "print":
		n, _ := strconv.Atoi(os.Args[2])
		for i := 1; i <= n; i++ {
			fmt.Printf("line %d from %s\n", i, os.Getenv("HOSTNAME"))
			time.Sleep(200 * time.Millisecond)
		}
	case "sleep":
		secs, _ := strconv.Atoi(os.Args[2])
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		var t <-chan time.Time
		if secs > 0 {
			t = time.After(time.Duration(secs) * time.Second)
		}
		select {
		case <-ch:
		case <-t:
		}
	case "cat":
		n, err := io.Copy(os.Stdout, os.Stdin)
		fmt.Printf("stdin closed after %d bytes err=%v\n", n, err)
	case "echo":
		fmt.Println(strings.Join(os.Args[2:], " "))
	case "listen":
		listen(os.Args[2])
	case "dial":
		timeout, err := time.ParseDuration(os.Args[3])
		if err != nil {
			fmt.Println("bad timeout:", err)
			os.Exit(2)
		}
		line, err := dial(os.Args[2], timeout)
		if err != nil {
			fmt.Println("dial failed:", err)
			os.Exit(1)
		}
		fmt.Println("connected:", line)
	case "probe":
		every, err1 := time.ParseDuration(os.Args[3])
		timeout, err2 := time.ParseDuration(os.Args[4])
		if err1 != nil || err2 != nil {
			fmt.Println("bad durations:", err1, err2)
			os.Exit(2)
		}
		for {
			start := time.Now()
			if _, err := dial(os.Args[2], timeout); err != nil {
				fmt.Printf("%d fail %v\n", start.UnixMilli(), err)
			} else {
				fmt.Printf("%d ok\n", start.UnixMilli())
			}
			time.Sleep(time.Until(start.Add(every)))
		}
	default:
		fmt.Println("unknown command", os.Args[1])
		os.Exit(2)
	}
}

// listen serves addr until SIGTERM: each connection is greeted with one line and closed.
func listen(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	fmt.Println("listening on", l.Addr())
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		os.Exit(0)
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Println("accept:", err)
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			fmt.Fprintf(c, "hello from %s\n", os.Getenv("HOSTNAME"))
		}()
	}
}

// dial connects to addr within timeout and reads the server's first line.
func dial(addr string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	return strings.TrimSpace(line), nil
}
