// micro TEST ARGS... - Go's side of the micro benchmarks (scripts/bench.sh
// runs it next to c-tests/co_bench_micro.c, with GOMAXPROCS=1 and =2 as
// corun runs with CORUN_WORKERS=1 and 2). Prints the same RESULT lines.
//
//	pingpong ITERS TRIALS  two goroutines each call runtime.Gosched ITERS
//	                       times; one round trip is A -> B -> A
//	spawn ITERS TRIALS     go f() + wait for it (a channel), one at a time
//	sleepers N MS TRIALS   N goroutines started at once, each sleeps MS ms;
//	                       wall time from the first start to the last end
package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func pingpong(iters int) float64 {
	var wg sync.WaitGroup
	t0 := time.Now()
	for k := 0; k < 2; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < iters; i++ {
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	return float64(time.Since(t0).Nanoseconds()) / float64(iters)
}

func spawn(iters int) float64 {
	done := make(chan struct{})
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		go func() { done <- struct{}{} }()
		<-done
	}
	return float64(time.Since(t0).Nanoseconds()) / float64(iters)
}

func sleepers(n int, ms int) float64 {
	var wg sync.WaitGroup
	short := 0
	var mu sync.Mutex
	t0 := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := time.Now()
			time.Sleep(time.Duration(ms) * time.Millisecond)
			if time.Since(s) < time.Duration(ms)*time.Millisecond {
				mu.Lock()
				short++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if short != 0 {
		fmt.Fprintf(os.Stderr, "micro: %d sleeps were short\n", short)
		os.Exit(1)
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e6
}

func report(test string, unit string, v []float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	fmt.Printf("RESULT %s median=%.2f min=%.2f max=%.2f unit=%s trials=%s\n",
		test, s[len(s)/2], s[0], s[len(s)-1], unit, strings.Join(parts, ","))
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: micro pingpong|spawn ITERS TRIALS | sleepers N MS TRIALS")
		os.Exit(2)
	}
	a, _ := strconv.Atoi(os.Args[2])
	b, _ := strconv.Atoi(os.Args[3])
	switch os.Args[1] {
	case "sleepers":
		if len(os.Args) < 5 {
			os.Exit(2)
		}
		trials, _ := strconv.Atoi(os.Args[4])
		v := make([]float64, trials)
		for i := range v {
			v[i] = sleepers(a, b)
		}
		report("sleepers", "ms", v)
	case "pingpong", "spawn":
		f := pingpong
		if os.Args[1] == "spawn" {
			f = spawn
		}
		f(a / 10)
		v := make([]float64, b)
		for i := range v {
			v[i] = f(a)
		}
		report(os.Args[1], "ns", v)
	default:
		fmt.Fprintln(os.Stderr, "unknown test", os.Args[1])
		os.Exit(2)
	}
}
