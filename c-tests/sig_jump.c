/*
 * sig_jump [ROUNDS]: the read-timeout pattern. A SIGALRM handler leaves a
 * blocked read with siglongjmp:
 *
 *   if (sigsetjmp(env, 1) == 0) { arm a 1 ms timer; read(...); }
 *   else timed out
 *
 * ROUNDS (default 1000) times in main, then as many in a thread while main
 * blocks SIGALRM and waits in pthread_join (the signal must go to the
 * thread), while another thread ticks. After the jumps: SIGALRM is not
 * left blocked, a read with data and a sleep still work, the ticker ran.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile sig_atomic_t jumps;
static int rounds;
static int p[2];
static volatile int stop;
static volatile long ticks;

static void on_alarm(int s)
{
    (void)s;
    jumps++;
    siglongjmp(env, 1);
}

static void arm_1ms(void)
{
    struct itimerval it = {{0, 0}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* Returns the number of reads that timed out. */
static int timeouts(const char *who)
{
    volatile int n = 0, bad = 0;
    char c;
    for (volatile int i = 0; i < rounds; i++) {
        if (sigsetjmp(env, 1) == 0) {
            arm_1ms();
            ssize_t r = read(p[0], &c, 1);
            (void)r;
            bad++; /* the read returned: not the pattern's path */
        } else {
            n++;
        }
    }
    sigset_t cur;
    pthread_sigmask(SIG_SETMASK, NULL, &cur);
    if (write(p[1], "d", 1) != 1)
        return -1;
    ssize_t r = read(p[0], &c, 1);
    struct timespec ts = {0, 20000000};
    int s = nanosleep(&ts, NULL);
    printf("%s: %d/%d reads timed out by siglongjmp, %d returned; SIGALRM blocked after: %d; read with data -> %ld; "
           "nanosleep -> %d\n",
           who, n, rounds, bad, sigismember(&cur, SIGALRM), (long)r, s);
    fflush(stdout);
    return n;
}

static void *in_thread(void *a)
{
    (void)a;
    sigset_t al;
    sigemptyset(&al);
    sigaddset(&al, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &al, NULL);
    timeouts("thread");
    return NULL;
}

static void *ticker(void *a)
{
    (void)a;
    /* Not a taker of SIGALRM: its handler jumps into the timed threads. */
    sigset_t al;
    sigemptyset(&al);
    sigaddset(&al, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &al, NULL);
    while (!stop) {
        usleep(1000);
        ticks++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atoi(argv[1]) : 1000;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    if (pipe(p))
        return 1;
    pthread_t tk;
    pthread_create(&tk, NULL, ticker, NULL);
    timeouts("main");

    sigset_t al;
    sigemptyset(&al);
    sigaddset(&al, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &al, NULL);
    pthread_t t;
    pthread_create(&t, NULL, in_thread, NULL);
    pthread_join(t, NULL);
    stop = 1;
    pthread_join(tk, NULL);
    printf("handler ran %d times; the ticker ran: %d\n", (int)jumps, ticks > 10);
    return jumps == 2 * rounds ? 0 : 1;
}
