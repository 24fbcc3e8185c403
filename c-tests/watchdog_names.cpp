// watchdog_names - threads that hold their worker, for corun's watchdog
// messages (scripts/tests/watchdog.sh):
//   lambda MS   a std::thread running a lambda spins MS ms of CPU; main joins it
//   fnptr MS    a std::thread running the function spin_for spins MS ms of CPU
//   yield MS    a std::thread calls sched_yield for MS ms (nothing else runs)
//   block MS    a std::thread running block_for sleeps MS ms in a raw
//               nanosleep system call (one corun does not see)
//   create N    main creates N threads (64 KiB stacks) without a pause,
//               then joins them all
// Each prints one line saying what it did; natively the same.
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

static long elapsed_ms(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
        .count();
}

// Milliseconds of CPU time the calling thread has used: the spinners
// compute for so much CPU, not wall time, so that a loaded machine which
// leaves them without a CPU for a while does not cut their work short (the
// watchdog measures a computing coroutine in CPU time too).
static long cpu_ms()
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

// A named function, not inlined, so its symbol is what names the thread.
__attribute__((noinline)) void spin_for(long ms)
{
    long t0 = cpu_ms();
    volatile unsigned long x = 0;
    while (cpu_ms() - t0 < ms)
        x = x + 1;
}

// Sleeps in the kernel where no hook sees it: an inline system call, no
// libc function (corun takes a nanosleep made through syscall() as the
// libc one and parks).
__attribute__((noinline)) void block_for(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
                     : "rcx", "r11", "memory");
    (void)r;
}

static void *nothing(void *) { return nullptr; }

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s lambda|fnptr|block|yield|create N\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long n = std::atol(argv[2]);
    if (!std::strcmp(mode, "lambda")) {
        std::thread t([n] {
            long t0 = cpu_ms();
            volatile unsigned long x = 0;
            while (cpu_ms() - t0 < n)
                x = x + 1;
        });
        t.join();
        std::printf("lambda spun %ld ms\n", n);
    } else if (!std::strcmp(mode, "fnptr")) {
        std::thread t(spin_for, n);
        t.join();
        std::printf("spin_for spun %ld ms\n", n);
    } else if (!std::strcmp(mode, "block")) {
        std::thread t(block_for, n);
        t.join();
        std::printf("block_for slept %ld ms\n", n);
    } else if (!std::strcmp(mode, "yield")) {
        long yields = 0;
        std::thread t([n, &yields] {
            auto t0 = std::chrono::steady_clock::now();
            while (elapsed_ms(t0) < n) {
                sched_yield();
                yields++;
            }
        });
        t.join();
        std::printf("yielded for %ld ms: %s\n", n, yields > 0 ? "yes" : "no");
    } else if (!std::strcmp(mode, "create")) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64 * 1024);
        std::vector<pthread_t> ts(n);
        long made = 0;
        for (long i = 0; i < n; i++)
            if (pthread_create(&ts[i], &a, nothing, nullptr) == 0)
                made++;
            else
                break;
        for (long i = 0; i < made; i++)
            pthread_join(ts[i], nullptr);
        std::printf("created and joined %s threads\n", made == n ? "all" : "NOT all");
    } else {
        return 2;
    }
    return 0;
}
