/*
 * thread_ids.c - each thread has its own tid, as the kernel gives one:
 * gettid() and syscall(SYS_gettid) agree, differ between threads, equal
 * the pid only in main; tgkill/tkill/rt_tgsigqueueinfo on a thread's tid
 * run the handler in that thread; the scheduling calls accept a thread's
 * tid; a joined thread's tid is gone (ESRCH).
 *
 * Prints one line per fact; scripts/tests/thread_ids.sh requires the same
 * lines natively and under corun.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 8

static pid_t tids[THREADS];
static pthread_t handles[THREADS];
static pthread_barrier_t ready, done;
static volatile sig_atomic_t hits[THREADS];
static volatile sig_atomic_t wrong;

static int index_of_self(void)
{
    for (int i = 0; i < THREADS; i++)
        if (pthread_equal(handles[i], pthread_self()))
            return i;
    return -1;
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    int i = index_of_self();
    if (i < 0 || gettid() != tids[i] || si->si_pid != getpid()) {
        wrong = 1;
        return;
    }
    hits[i]++;
}

static void *run(void *arg)
{
    int i = (int)(long)arg;
    tids[i] = gettid();
    if (syscall(SYS_gettid) != tids[i])
        wrong = 1;
    pthread_barrier_wait(&ready);
    /* main signals each thread three ways, then waits at `done`. */
    pthread_barrier_wait(&done);
    return NULL;
}

static void check(const char *what, int ok)
{
    printf("%s: %s\n", what, ok ? "yes" : "NO");
}

/* set_tid_address from a detached thread (stress-ng's pthread stressor):
 * the call returns the thread's tid, and when the thread exits the word
 * becomes 0 and a futex waiter on it is woken, as the kernel does. */
static volatile int clear_word;
static volatile int set_tid_result_ok;

static void *names_its_word(void *arg)
{
    (void)arg;
    clear_word = (int)gettid();
    set_tid_result_ok = syscall(SYS_set_tid_address, &clear_word) == gettid();
    usleep(30000);
    return NULL;
}

static int word_cleared_at_exit(void)
{
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    clear_word = -1;
    if (pthread_create(&t, &a, names_its_word, NULL) != 0)
        return 0;
    for (int i = 0; i < 500; i++) {
        int v = clear_word;
        if (v == 0)
            return 1;
        if (v == -1) {
            usleep(1000);
            continue;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        syscall(SYS_futex, &clear_word, FUTEX_WAIT, v, &ts, NULL, 0);
    }
    return 0;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_barrier_init(&ready, NULL, THREADS + 1);
    pthread_barrier_init(&done, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&handles[i], NULL, run, (void *)(long)i) != 0) {
            perror("pthread_create");
            return 2;
        }
    pthread_barrier_wait(&ready);

    pid_t pid = getpid();
    check("main's tid is the pid", gettid() == pid && syscall(SYS_gettid) == pid);
    int distinct = 1, not_pid = 1;
    for (int i = 0; i < THREADS; i++) {
        not_pid &= tids[i] != pid && tids[i] > 0;
        for (int j = 0; j < i; j++)
            distinct &= tids[i] != tids[j];
    }
    check("each thread's tid is its own", distinct);
    check("no thread but main has the pid as tid", not_pid);

    /* One signal at a time (a standard signal pending twice is one), each
     * waited for: the handler runs in the target thread. */
    for (int i = 0; i < THREADS; i++) {
        for (int way = 0; way < 4; way++) {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            si.si_signo = SIGUSR1;
            si.si_code = SI_QUEUE;
            si.si_pid = pid;
            si.si_uid = getuid();
            long r = way == 0   ? tgkill(pid, tids[i], SIGUSR1)
                     : way == 1 ? syscall(SYS_tgkill, pid, tids[i], SIGUSR1)
                     : way == 2 ? syscall(SYS_tkill, tids[i], SIGUSR1)
                                : syscall(SYS_rt_tgsigqueueinfo, pid, tids[i], SIGUSR1, &si);
            if (r != 0) {
                printf("signal %d to thread %d: %s\n", way, i, strerror(errno));
                return 1;
            }
            for (int w = 0; w < 5000 && hits[i] <= way; w++)
                usleep(1000);
        }
    }
    check("tgkill of a thread's tid, signal 0", tgkill(pid, tids[0], 0) == 0);
    check("tgkill with another tgid: ESRCH", tgkill(1, tids[0], SIGUSR1) == -1 && errno == ESRCH);
    check("tgkill with signal 99: EINVAL", tgkill(pid, tids[0], 99) == -1 && errno == EINVAL);

    cpu_set_t set;
    CPU_ZERO(&set);
    check("sched_getaffinity(tid)", sched_getaffinity(tids[1], sizeof set, &set) == 0 && CPU_COUNT(&set) > 0);
    check("sched_setaffinity(tid, same set)", sched_setaffinity(tids[1], sizeof set, &set) == 0);
    check("sched_getscheduler(tid) is SCHED_OTHER", sched_getscheduler(tids[1]) == SCHED_OTHER);
    struct sched_param sp = {.sched_priority = 0};
    check("sched_getparam(tid)", sched_getparam(tids[1], &sp) == 0 && sp.sched_priority == 0);
    errno = 0;
    int nice_main = getpriority(PRIO_PROCESS, 0);
    check("getpriority(tid) is main's", getpriority(PRIO_PROCESS, tids[1]) == nice_main && errno == 0);
    check("setpriority(tid, same)", setpriority(PRIO_PROCESS, tids[1], nice_main) == 0);

    pthread_barrier_wait(&done);
    for (int i = 0; i < THREADS; i++)
        pthread_join(handles[i], NULL);
    int all = 1;
    for (int i = 0; i < THREADS; i++)
        all &= hits[i] == 4;
    check("four signals ran in each target thread, and only there", all && !wrong);
    check("a joined thread's tid: ESRCH", tgkill(pid, tids[0], 0) == -1 && errno == ESRCH);
    check("sched_getscheduler of a joined thread: ESRCH", sched_getscheduler(tids[0]) == -1 && errno == ESRCH);
    int cleared = word_cleared_at_exit();
    check("set_tid_address returns the thread's tid", set_tid_result_ok);
    check("the set_tid_address word is 0 after the thread's exit, its waiter woken", cleared);
    return all && !wrong ? 0 : 1;
}
