/*
 * libco_micro TEST ARGS... - libco's side of corun's micro benchmarks
 * (scripts/bench.sh runs it next to c-tests/co_bench_micro.c,
 * c-tests/go/micro.go and bench/may_http's may_micro). Prints the same
 * RESULT lines. libco has one scheduler per thread and no way to run a
 * coroutine on another thread, so it has 1-worker rows only.
 *
 *   pingpong ITERS TRIALS  a round trip: co_resume of a coroutine that
 *                          co_yield_ct()s straight back (two switches, as
 *                          A -> B -> A is in the others)
 *   spawn ITERS TRIALS     co_create + co_resume of an empty coroutine,
 *                          which ends, + co_release
 *   sleepers N MS TRIALS   N coroutines started at once in libco's event
 *                          loop, each waits MS ms in co_poll with no fd;
 *                          wall time from the first start to the last end
 *
 * Stacks are libco's default (128 KiB, malloc'd) except for sleepers,
 * which asks for 64 KiB: glibc serves 128 KiB blocks with one mmap each,
 * and 100,000 of them exceed the kernel's 65,530 mappings per process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "co_routine.h"

namespace {

double now_ns()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

void *yielder(void *)
{
    for (;;)
        co_yield_ct();
    return nullptr;
}

double pingpong(long iters)
{
    stCoRoutine_t *co;
    co_create(&co, nullptr, yielder, nullptr);
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        co_resume(co);
    double ns = (now_ns() - t0) / (double)iters;
    co_release(co);
    return ns;
}

void *empty(void *arg)
{
    ++*static_cast<long *>(arg);
    return nullptr;
}

double spawn(long iters)
{
    long ran = 0;
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        stCoRoutine_t *co;
        co_create(&co, nullptr, empty, &ran);
        co_resume(co);
        co_release(co);
    }
    double ns = (now_ns() - t0) / (double)iters;
    if (ran != iters) {
        fprintf(stderr, "libco_micro: %ld of %ld coroutines ran\n", ran, iters);
        exit(1);
    }
    return ns;
}

struct Sleep {
    long n, done, short_;
    int ms;
};

void *sleeper(void *arg)
{
    Sleep *s = static_cast<Sleep *>(arg);
    double t0 = now_ns();
    co_poll(co_get_epoll_ct(), nullptr, 0, s->ms);
    if (now_ns() - t0 < s->ms * 1e6)
        s->short_++;
    s->done++;
    return nullptr;
}

int all_done(void *arg)
{
    Sleep *s = static_cast<Sleep *>(arg);
    return s->done == s->n ? -1 : 0;
}

double sleepers(long n, int ms)
{
    Sleep s = {n, 0, 0, ms};
    stCoRoutineAttr_t attr;
    attr.stack_size = 64 * 1024;
    std::vector<stCoRoutine_t *> cos(n);
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        co_create(&cos[i], &attr, sleeper, &s);
        co_resume(cos[i]);
    }
    co_eventloop(co_get_epoll_ct(), all_done, &s);
    double ms_taken = (now_ns() - t0) / 1e6;
    for (auto co : cos)
        co_release(co);
    if (s.short_)
        fprintf(stderr, "libco_micro: %ld of %ld sleeps were shorter than %d ms\n", s.short_, n, ms);
    return ms_taken;
}

void report(const char *test, const char *unit, std::vector<double> v)
{
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    printf("RESULT %s median=%.2f min=%.2f max=%.2f unit=%s trials=", test, s[s.size() / 2], s[0], s.back(), unit);
    for (size_t i = 0; i < v.size(); i++)
        printf("%s%.2f", i ? "," : "", v[i]);
    printf("\n");
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: libco_micro pingpong|spawn ITERS TRIALS | sleepers N MS TRIALS\n");
        return 2;
    }
    long a = atol(argv[2]), b = atol(argv[3]);
    if (strcmp(argv[1], "sleepers") == 0) {
        if (argc < 5)
            return 2;
        std::vector<double> v(atol(argv[4]));
        for (auto &x : v)
            x = sleepers(a, (int)b);
        report("sleepers", "ms", v);
    } else if (strcmp(argv[1], "pingpong") == 0 || strcmp(argv[1], "spawn") == 0) {
        double (*f)(long) = strcmp(argv[1], "spawn") == 0 ? spawn : pingpong;
        f(a / 10);
        std::vector<double> v(b);
        for (auto &x : v)
            x = f(a);
        report(argv[1], "ns", v);
    } else {
        fprintf(stderr, "unknown test %s\n", argv[1]);
        return 2;
    }
    return 0;
}
