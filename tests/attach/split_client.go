// split_client.go - a split-writing line client in Go, built by
// tests/attach/run.sh with CGO_ENABLED=0 (a static binary that no
// preloaded library can enter): it dials (Go turns TCP_NODELAY on), then
// turns it off itself, SetNoDelay(false), the legacy shape in Go.
// Usage: split_client_go HOST PORT ROUNDS
// Per round it writes "hello I " and "world I\r\n" (two writes) and reads
// the echoed line, checked to the byte. Prints
// "median_ms=X p99_ms=Y rounds=N nodelay=V" (V read by getsockopt after
// SetNoDelay(false)), every round counted, the first too; exits 1 on a
// wrong line or a lost connection.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"syscall"
	"time"
)

func nodelay(c *net.TCPConn) int {
	raw, err := c.SyscallConn()
	v := -1
	if err == nil {
		raw.Control(func(fd uintptr) {
			v, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
		})
	}
	return v
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: split_client_go HOST PORT ROUNDS")
		os.Exit(2)
	}
	rounds, _ := strconv.Atoi(os.Args[3])
	conn, err := net.Dial("tcp", net.JoinHostPort(os.Args[1], os.Args[2]))
	if err != nil || rounds < 1 {
		fmt.Fprintln(os.Stderr, "split_client_go: connect:", err)
		os.Exit(1)
	}
	c := conn.(*net.TCPConn)
	if err := c.SetNoDelay(false); err != nil {
		fmt.Fprintln(os.Stderr, "split_client_go: SetNoDelay:", err)
		os.Exit(1)
	}
	v := nodelay(c)
	r := bufio.NewReader(c)
	ms := make([]float64, rounds)
	for i := 0; i < rounds; i++ {
		t0 := time.Now()
		fmt.Fprintf(c, "hello %d ", i)
		fmt.Fprintf(c, "world %d\r\n", i)
		got, err := r.ReadString('\n')
		if err != nil || got != fmt.Sprintf("hello %d world %d\n", i, i) {
			fmt.Printf("BAD round %d\n", i)
			os.Exit(1)
		}
		ms[i] = float64(time.Since(t0).Nanoseconds()) / 1e6
	}
	sort.Float64s(ms)
	fmt.Printf("median_ms=%.3f p99_ms=%.3f rounds=%d nodelay=%d\n", ms[rounds/2],
		ms[(rounds*99+99)/100-1], rounds, v)
}
