/*
 * stop_world.c - a stop-the-world collector in the way Boehm GC (bdwgc)
 * makes one, which guile, and every program built on bdwgc with threads,
 * runs at each collection: the collector sends each mutator thread a
 * "suspend" signal with pthread_kill and waits on a semaphore for every
 * acknowledgement; each mutator's handler posts the semaphore, then waits
 * in sigsuspend (every signal blocked but "restart") until the collector
 * sends "restart"; then the collector waits for a second round of
 * acknowledgements.
 *
 * Under corun a mutator that is parked (in a sleep, a condition wait, a
 * semaphore) runs its handler when it resumes; the handler's sigsuspend
 * blocked its worker, so the collector, or the next mutator to
 * acknowledge, never ran on that worker again: every collection hung.
 * Two more mutators compute without a pause: on another worker the
 * signal interrupts them there, and a handler run in the kernel's signal
 * frame blocked that worker in sigsuspend the same way (bdwgc: "Signals
 * delivery fails constantly"); they are preempted at a safe point and run
 * the handler as their own code instead (sched/preempt.rs).
 *
 * The handler also checks what Mono's suspend handler reads from its
 * ucontext: the interrupted stack pointer (on the thread's own stack, near
 * the handler's frame) and pc; a zeroed context made Mono retry each
 * suspend for ever.
 *
 * Prints the rounds done and each mutator's work; the same natively and
 * under corun. A round that misses an acknowledgement for 5 s ends the
 * program with "stuck" (as bdwgc aborts with "Signals delivery fails
 * constantly").
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define MUTATORS 8
#define COMPUTING 2 /* the last two */
#define ROUNDS 50
#define SIG_SUSPEND SIGPWR
#define SIG_RESTART SIGXCPU

static sem_t acks;
static volatile sig_atomic_t restarted[MUTATORS];
static pthread_t mutators[MUTATORS];
static __thread int my_index = -1;
static volatile int stopping;
/* Mutators that have set my_index: a collector stops only registered
 * threads (bdwgc registers each before it can be stopped). A thread
 * signalled before its start routine ran took the signal with index -1
 * and waited for a restart that never named it: a fixed 20 ms head start
 * was not enough on a loaded machine. */
static int registered;
static long work_done[MUTATORS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void on_restart(int sig)
{
    (void)sig;
    if (my_index >= 0)
        restarted[my_index] = 1;
}

static volatile int bad_context;

static void on_suspend(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    int saved = errno;
    int me = my_index;
    ucontext_t *uc = ucv;
    char here;
    unsigned long sp = (unsigned long)uc->uc_mcontext.gregs[REG_RSP];
    unsigned long at = (unsigned long)&here;
    if (uc->uc_mcontext.gregs[REG_RIP] == 0 || sp < at || sp - at > (1UL << 20))
        bad_context = 1;
    restarted[me] = 0;
    sigset_t wait_mask;
    sigfillset(&wait_mask);
    sigdelset(&wait_mask, SIG_RESTART);
    sem_post(&acks); /* stopped: the collector may go on */
    while (!restarted[me])
        sigsuspend(&wait_mask);
    sem_post(&acks); /* running again */
    errno = saved;
}

/* Waits the way a program's threads do between bits of work: a sleep, a
 * timed condition wait, a semaphore with a timeout. */
static void *computing_mutator(void *arg)
{
    my_index = (int)(long)arg;
    __atomic_add_fetch(&registered, 1, __ATOMIC_SEQ_CST);
    unsigned long x = (unsigned long)my_index;
    while (!stopping) {
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        work_done[my_index] += 1 + (long)(x & 0);
    }
    return NULL;
}

static void *mutator(void *arg)
{
    my_index = (int)(long)arg;
    __atomic_add_fetch(&registered, 1, __ATOMIC_SEQ_CST);
    sem_t own;
    sem_init(&own, 0, 0);
    for (long i = 0; !stopping; i++) {
        switch (i % 3) {
        case 0:
            usleep(500);
            break;
        case 1: {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 300000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_mutex_lock(&lock);
            pthread_cond_timedwait(&cond, &lock, &ts);
            pthread_mutex_unlock(&lock);
            break;
        }
        default: {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            sem_timedwait(&own, &ts);
        }
        }
        work_done[my_index]++;
    }
    sem_destroy(&own);
    return NULL;
}

/* Waits for `n` acknowledgements, 5 s at most. */
static int acknowledged(int n)
{
    for (int i = 0; i < n; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 5;
        while (sem_timedwait(&acks, &ts) != 0)
            if (errno != EINTR)
                return 0;
    }
    return 1;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigfillset(&sa.sa_mask);
    sigdelset(&sa.sa_mask, SIG_RESTART);
    sa.sa_sigaction = on_suspend;
    sigaction(SIG_SUSPEND, &sa, NULL);
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_restart;
    sigaction(SIG_RESTART, &sa, NULL);
    sem_init(&acks, 0, 0);

    for (long i = 0; i < MUTATORS; i++)
        pthread_create(&mutators[i], NULL, i < MUTATORS - COMPUTING ? mutator : computing_mutator, (void *)i);
    for (int i = 0; __atomic_load_n(&registered, __ATOMIC_SEQ_CST) < MUTATORS && i < 10000; i++)
        usleep(1000); /* bounded: 10 s */
    int rounds = 0;
    for (; rounds < ROUNDS; rounds++) {
        long before[MUTATORS];
        for (int i = 0; i < MUTATORS; i++)
            pthread_kill(mutators[i], SIG_SUSPEND);
        if (!acknowledged(MUTATORS)) {
            printf("stuck: a mutator never stopped in round %d\n", rounds);
            fflush(stdout);
            _exit(1);
        }
        /* The world is stopped: no mutator's count moves. */
        for (int i = 0; i < MUTATORS; i++)
            before[i] = work_done[i];
        usleep(2000);
        for (int i = 0; i < MUTATORS; i++)
            if (work_done[i] != before[i]) {
                printf("round %d: mutator %d worked while stopped\n", rounds, i);
                fflush(stdout);
                _exit(1);
            }
        for (int i = 0; i < MUTATORS; i++)
            pthread_kill(mutators[i], SIG_RESTART);
        if (!acknowledged(MUTATORS)) {
            printf("stuck: a mutator never restarted in round %d\n", rounds);
            fflush(stdout);
            _exit(1);
        }
        usleep(1000);
    }
    stopping = 1;
    int worked = 0;
    for (int i = 0; i < MUTATORS; i++) {
        pthread_join(mutators[i], NULL);
        worked += work_done[i] > rounds;
    }
    printf("%d rounds of stop and restart, %d of %d mutators worked between them\n", rounds, worked, MUTATORS);
    printf("each handler's context held its thread's stack pointer and pc: %s\n", bad_context ? "NO" : "yes");
    return 0;
}
