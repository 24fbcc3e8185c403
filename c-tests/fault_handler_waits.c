/* A fault handler that waits for another thread, as SBCL's garbage
 * collector does: SBCL ends an allocation sequence with a trap
 * instruction when a collection is due, and its SIGTRAP (or SIGILL)
 * handler runs the collector, which stops every other thread and waits
 * on a semaphore until each has acknowledged. Natively the waiting thread
 * sleeps and the others run. Under corun the handler runs in place in the
 * faulting coroutine, in the kernel's signal frame; its wait blocked the
 * worker, so a thread of the same worker never ran to acknowledge, and
 * the process hung (sbcl --script with 8 allocating threads, every run).
 *
 * THREADS threads each trap ROUNDS times (int3, then ud2 whose handler
 * steps the pc over it, as SBCL's does); each handler asks a helper
 * thread for a token and waits for it on a semaphore (bounded: a wait
 * that times out is counted, not hung; one fault is in flight at a
 * time). A value held in registers across
 * the trap must survive it, and the thread must come back. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#define THREADS 4
#define ROUNDS 50

static sem_t asked;
static sem_t answered;
static __thread int my_index;
static int timeouts;
static int handled[THREADS];

static void handler(int sig, siginfo_t *si, void *ucv) {
    ucontext_t *uc = ucv;
    (void)si;
    if (sig == SIGILL) {
#if defined(__x86_64__)
        uc->uc_mcontext.gregs[REG_RIP] += 2; /* past ud2 */
#elif defined(__aarch64__)
        uc->uc_mcontext.pc += 4;
#endif
    }
#if defined(__aarch64__)
    if (sig == SIGTRAP)
        uc->uc_mcontext.pc += 4; /* past brk */
#endif
    int i = my_index;
    /* The handler asks, then waits for the answer: async-signal-safe
     * calls only, as SBCL's stop-the-world uses. */
    if (sem_post(&asked) != 0)
        abort();
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    while (sem_timedwait(&answered, &until) != 0) {
        if (errno == ETIMEDOUT) {
            __atomic_add_fetch(&timeouts, 1, __ATOMIC_SEQ_CST);
            return;
        }
    }
    handled[i]++;
}

static void trap(void) {
#if defined(__x86_64__)
    __asm__ volatile("int3" ::: "memory");
#elif defined(__aarch64__)
    __asm__ volatile("brk #0" ::: "memory");
#endif
}

static void illegal(void) {
#if defined(__x86_64__)
    __asm__ volatile("ud2" ::: "memory");
#elif defined(__aarch64__)
    __asm__ volatile(".inst 0x00000000" ::: "memory");
#endif
}

static void *helper(void *arg) {
    (void)arg;
    /* Answers every request: one fault is in flight at a time (the
     * faulting threads take turns under `one_at_a_time`). */
    for (int n = 0; n < THREADS * ROUNDS * 2; n++) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        if (sem_timedwait(&asked, &until) != 0)
            return NULL;
        sem_post(&answered);
    }
    return NULL;
}

static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

static void *faulter(void *arg) {
    int i = (int)(long)arg;
    my_index = i;
    volatile unsigned long sink = 0;
    int survived = 0;
    for (int r = 0; r < ROUNDS; r++) {
        unsigned long held = 0x9e3779b97f4a7c15UL * (unsigned long)(r + 1 + i * 1000);
        pthread_mutex_lock(&one_at_a_time);
        trap();
        unsigned long after_trap = held ^ 0x55;
        illegal();
        pthread_mutex_unlock(&one_at_a_time);
        if ((after_trap ^ 0x55) == held)
            survived++;
        sink += held;
        sched_yield();
    }
    (void)sink;
    return (void *)(long)survived;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTRAP, &sa, NULL) || sigaction(SIGILL, &sa, NULL))
        return 1;
    sem_init(&asked, 0, 0);
    sem_init(&answered, 0, 0);
    pthread_t h, f[THREADS];
    pthread_create(&h, NULL, helper, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&f[i], NULL, faulter, (void *)(long)i);
    int survived = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(f[i], &r);
        survived += (int)(long)r;
    }
    pthread_join(h, NULL);
    int total = 0;
    for (int i = 0; i < THREADS; i++)
        total += handled[i];
    printf("%d traps handled by a wait another thread ended, %d timed out\n", total, timeouts);
    printf("%d of %d values held across the traps survived\n", survived, THREADS * ROUNDS);
    return 0;
}
