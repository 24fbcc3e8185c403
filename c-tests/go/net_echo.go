// net_echo - a Go program with goroutines, a TCP echo server and 50
// clients on 127.0.0.1, timers and a mutex (scripts/tests/go_programs.sh).
// Prints on stdout what it checked (the same natively and under corun),
// and on stderr whether libcorun.so is mapped into it: built with cgo (the
// default), Go starts its threads with pthread_create and calls libc, so
// corun is loaded and runs them; built without cgo, the binary is static
// and LD_PRELOAD has no effect.
package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

func main() {
	maps, _ := os.ReadFile("/proc/self/maps")
	fmt.Fprintln(os.Stderr, "libcorun mapped:", strings.Contains(string(maps), "libcorun"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				time.Sleep(10 * time.Millisecond)
				c.Write(buf[:n])
			}(c)
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				return
			}
			defer c.Close()
			msg := fmt.Sprintf("hello %d", i)
			c.Write([]byte(msg))
			buf := make([]byte, 64)
			n, _ := c.Read(buf)
			if string(buf[:n]) == msg {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	fmt.Println("echoes answered exactly:", ok, "of 50")
	ticks := 0
	t := time.NewTicker(5 * time.Millisecond)
	for range t.C {
		ticks++
		if ticks == 20 {
			break
		}
	}
	fmt.Println("ticker ticks:", ticks)
}
