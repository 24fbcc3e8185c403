/* Two threads hand a turn back and forth through a futex word with
 * syscall(SYS_futex) (as libstdc++'s atomic wait and Rust std's locks
 * do), ROUNDS times, then print the process's CPU time (getrusage) and
 * "done". Under corun each wait of a coroutine first asks the kernel
 * whether it would sleep: that question must cost about a system call,
 * not a timer armed and fired (45 us of system time each on a VM).
 *
 * Usage: futex_pingpong ROUNDS */
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned word; /* 1: the partner's turn, 0: main's */
static int rounds;

static void wait_while(unsigned v) {
    while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) == v)
        syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void set_and_wake(unsigned v) {
    __atomic_store_n(&word, v, __ATOMIC_RELEASE);
    syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *partner(void *arg) {
    (void)arg;
    for (int i = 0; i < rounds; i++) {
        wait_while(0);
        set_and_wake(0);
    }
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atoi(argv[1]) : 0;
    if (rounds < 1) {
        fprintf(stderr, "usage: %s ROUNDS\n", argv[0]);
        return 2;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, partner, NULL) != 0)
        return 2;
    for (int i = 0; i < rounds; i++) {
        set_and_wake(1);
        wait_while(1);
    }
    pthread_join(t, NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
              (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
    printf("cpu_ms %ld\ndone\n", ms);
    return 0;
}
