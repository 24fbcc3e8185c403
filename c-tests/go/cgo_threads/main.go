// cgo_threads: a Go program built with cgo (its runtime makes its threads
// with pthread_create and waits with inline futex/epoll system calls),
// run unchanged under corun by scripts/tests/go_cgo.sh. Goroutines sleep,
// lock, call C (one that blocks in usleep), pass values over channels and
// serve HTTP over 127.0.0.1; the output is the same natively and under
// corun.
package main

/*
#include <unistd.h>
static int add(int a, int b) { return a + b; }
static void nap(int us) { usleep(us); }
*/
import "C"

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

func main() {
	var wg sync.WaitGroup
	var mu sync.Mutex
	sum := 0
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(i%5) * time.Millisecond)
			if i%20 == 0 {
				C.nap(20000) // a C call that blocks its thread
			}
			r := int(C.add(C.int(i), 1))
			mu.Lock()
			sum += r
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	fmt.Println("sum of 200 cgo calls:", sum)

	ch := make(chan int)
	go func() {
		for i := 0; i < 100000; i++ {
			ch <- i
		}
		close(ch)
	}()
	total := 0
	for v := range ch {
		total += v
	}
	fmt.Println("channel total:", total)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	body := make([]byte, 100000)
	for i := range body {
		body[i] = byte(i * 7)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	want := sha256.Sum256(body)
	var cwg sync.WaitGroup
	bad := 0
	for c := 0; c < 20; c++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for k := 0; k < 10; k++ {
				resp, err := http.Get("http://" + ln.Addr().String() + "/")
				if err != nil {
					mu.Lock()
					bad++
					mu.Unlock()
					continue
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if sha256.Sum256(got) != want {
					mu.Lock()
					bad++
					mu.Unlock()
				}
			}
		}()
	}
	cwg.Wait()
	fmt.Println("200 HTTP replies checked, bad:", bad)
}
