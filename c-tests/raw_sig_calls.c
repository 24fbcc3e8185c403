// The signal calls a program makes through syscall(2) see the thread's own
// signals, as the libc names do: in a thread, raw rt_sigpending shows a
// SIGUSR1 sent to it while blocked, raw rt_sigtimedwait takes it, raw
// rt_sigsuspend with an empty mask returns EINTR once another thread's
// pthread_kill ran its handler there, raw sigaltstack sets what
// sigaltstack() reads back (and back), and a handler installed with raw
// rt_sigaction is what sigaction() reports and runs for a signal sent to
// the thread. corun kept the thread's signals on its side: the raw calls
// saw the worker's kernel state (rt_sigpending: nothing; rt_sigtimedwait:
// EAGAIN after its timeout), and rt_sigsuspend waited for ever.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static __thread int idx;
static volatile sig_atomic_t h_idx = -1, h_count;
static volatile sig_atomic_t suspending;

static void on_sig(int s) {
    (void)s;
    h_idx = idx;
    h_count++;
}

// The kernel's struct sigaction on x86_64.
struct ksigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

#define BIT(s) (1UL << ((s) - 1))

static void *thr(void *a) {
    (void)a;
    idx = 1;
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &m, NULL);

    pthread_kill(pthread_self(), SIGUSR1);
    unsigned long k = 0;
    long r = syscall(SYS_rt_sigpending, &k, 8);
    printf("rt_sigpending: %ld usr1=%d\n", r, (k & BIT(SIGUSR1)) != 0);

    unsigned long w = BIT(SIGUSR1);
    struct timespec ts = {2, 0};
    siginfo_t si;
    memset(&si, 0, sizeof si);
    r = syscall(SYS_rt_sigtimedwait, &w, &si, &ts, 8);
    printf("rt_sigtimedwait: %ld signo=%d\n", r, si.si_signo);
    k = 0;
    syscall(SYS_rt_sigpending, &k, 8);
    printf("rt_sigpending after: usr1=%d\n", (k & BIT(SIGUSR1)) != 0);
    w = BIT(SIGUSR2);
    ts.tv_sec = 0;
    ts.tv_nsec = 20000000;
    r = syscall(SYS_rt_sigtimedwait, &w, &si, &ts, 8);
    printf("rt_sigtimedwait nothing: %ld %s\n", r, r < 0 ? strerror(errno) : "");
    r = syscall(SYS_rt_sigpending, &k, 16);
    printf("rt_sigpending size 16: %ld %s\n", r, r < 0 ? strerror(errno) : "");

    unsigned long empty = 0;
    h_count = 0;
    suspending = 1;
    r = syscall(SYS_rt_sigsuspend, &empty, 8);
    int e = errno;
    printf("rt_sigsuspend: %ld %s handler in thread %d, %d time(s)\n", r, strerror(e),
           (int)h_idx, (int)h_count);
    sigprocmask(SIG_BLOCK, NULL, &m);
    printf("mask back: usr1 blocked=%d\n", sigismember(&m, SIGUSR1));

    static char stk[65536];
    stack_t ss = {.ss_sp = stk, .ss_size = sizeof stk, .ss_flags = 0}, q, old;
    r = syscall(SYS_sigaltstack, &ss, NULL);
    sigaltstack(NULL, &q);
    printf("sigaltstack: %ld sigaltstack() sees it=%d\n", r, q.ss_sp == stk && q.ss_size == sizeof stk);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    syscall(SYS_sigaltstack, NULL, &old);
    printf("raw sigaltstack after disable: flags=%d\n", old.ss_flags);

    h_idx = -1;
    pthread_kill(pthread_self(), SIGUSR2);
    printf("handler from rt_sigaction ran in thread %d\n", (int)h_idx);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    idx = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sigaction(SIGUSR1, &sa, NULL);
    // A raw rt_sigaction for SIGUSR2, with glibc's restorer (read back
    // from the kernel's action for SIGUSR1).
    struct ksigaction kg, kn;
    syscall(SYS_rt_sigaction, SIGUSR1, NULL, &kg, 8);
    memset(&kn, 0, sizeof kn);
    kn.handler = on_sig;
    kn.flags = kg.flags;
    kn.restorer = kg.restorer;
    long r = syscall(SYS_rt_sigaction, SIGUSR2, &kn, NULL, 8);
    struct sigaction q;
    sigaction(SIGUSR2, NULL, &q);
    printf("rt_sigaction: %ld sigaction() sees it=%d\n", r, q.sa_handler == on_sig);
    r = syscall(SYS_rt_sigaction, SIGUSR2, NULL, &kg, 8);
    printf("rt_sigaction old: %ld same handler=%d\n", r, kg.handler == on_sig);

    pthread_t t;
    pthread_create(&t, NULL, thr, NULL);
    while (!suspending)
        usleep(1000);
    usleep(50000);
    h_idx = -1;
    pthread_kill(t, SIGUSR1);
    pthread_join(t, NULL);
    return 0;
}
