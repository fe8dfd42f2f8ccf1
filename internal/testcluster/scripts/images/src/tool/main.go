// tool: multi-call test binary for a FROM-scratch image.
//
//	tool print N      print N numbered lines (0.2 s apart) then exit 0
//	tool sleep SECS   sleep (0 = forever), exit 0 on SIGTERM
//	tool cat          copy stdin to stdout, then print "stdin closed"
//	tool echo ARGS    print ARGS
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage: tool print|sleep|cat|echo ...")
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
	default:
		fmt.Println("unknown command", os.Args[1])
		os.Exit(2)
	}
}
