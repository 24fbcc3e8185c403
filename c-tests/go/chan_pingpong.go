// chan_pingpong ITERS TRIALS - Go's side of the channel micro benchmark
// (scripts/bench.sh runs it next to c-tests/co_bench_micro.c's "chan"):
// main sends on an unbuffered channel, a goroutine receives and answers on
// another; one round trip is ping + pong. Prints the same RESULT line.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

func trial(iters int) float64 {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		ping <- i
		if <-pong != i {
			fmt.Fprintln(os.Stderr, "ping-pong broke")
			os.Exit(1)
		}
	}
	ns := float64(time.Since(t0).Nanoseconds()) / float64(iters)
	close(ping)
	return ns
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: chan_pingpong ITERS TRIALS")
		os.Exit(2)
	}
	iters, _ := strconv.Atoi(os.Args[1])
	trials, _ := strconv.Atoi(os.Args[2])
	trial(iters / 10)
	v := make([]float64, trials)
	for i := range v {
		v[i] = trial(iters)
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	parts := make([]string, trials)
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	fmt.Printf("RESULT chan median=%.2f min=%.2f max=%.2f unit=ns trials=%s\n",
		s[trials/2], s[0], s[trials-1], strings.Join(parts, ","))
}
