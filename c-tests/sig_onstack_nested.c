/*
 * sig_onstack_nested: a signal that arrives while a SA_ONSTACK handler
 * runs is handled, as natively, when the thread never parks again.
 *
 * CPython's test_signal (StressTest.test_stress_delivery_simultaneous)
 * does this: handlers for SIGUSR1 and SIGALRM (CPython sets SA_ONSTACK),
 * then, round after round, a one-shot ITIMER_REAL of 1 to 11 us, a
 * kill(getpid(), SIGUSR1), and short sleeps until both handlers ran. The
 * SIGALRM often lands while the SIGUSR1 handler runs. Under corun that
 * handler runs on the worker's alternate signal stack, and main, the
 * process's only coroutine, sleeps in nanosleep as natively: a SIGALRM
 * left pending there was never run, and the test waited for ever.
 *
 * ROUNDS rounds; each waits at most 5 s (a loaded machine) for both
 * handlers, in 1 ms sleeps. Each signal has its own counter (a handler
 * may interrupt the other). Prints a summary; exits 1 at the first round
 * whose signals did not all run.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 4000

static volatile sig_atomic_t usr1, alrm;
static void on_signal(int s)
{
    if (s == SIGUSR1)
        usr1++;
    else
        alrm++;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0 || sigaction(SIGALRM, &sa, NULL) != 0) {
        perror("sigaction");
        return 2;
    }
    srand(1);
    for (int round = 1; round <= ROUNDS; round++) {
        struct itimerval it = {{0, 0}, {0, 1 + rand() % 10}};
        setitimer(ITIMER_REAL, &it, NULL);
        kill(getpid(), SIGUSR1);
        for (int i = 0; i < 5000 && (usr1 < round || alrm < round); i++) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (usr1 != round || alrm != round) {
            printf("round %d: %d SIGUSR1 and %d SIGALRM handled after 5 s\n", round,
                   (int)usr1, (int)alrm);
            return 1;
        }
    }
    printf("%d rounds: every SIGUSR1 and SIGALRM handled\n", ROUNDS);
    return 0;
}
