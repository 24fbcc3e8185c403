/*
 * co_signals N ROUNDS: N coroutines parked in read() on socketpairs while
 * SIGALRM arrives every millisecond (handler installed without
 * SA_RESTART). A writer coroutine sends each reader ROUNDS bytes, one per
 * pass. SIGALRM is sent to the process: as on Linux it goes to main (here
 * waiting in corun_join, which goes on waiting after the handler), never
 * to a reader, so every read returns its byte, in order, with no error.
 * Prints the number of signals handled and of wrong results; exits 1 on
 * any.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <corun.h>

static volatile sig_atomic_t alarms;
static int n, rounds;
static int (*pairs)[2];
static long errors, eintr;

static void on_alarm(int s) { (void)s; alarms++; }

static void *reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (int r = 0; r < rounds; r++) {
        unsigned char c;
        ssize_t k = read(pairs[i][0], &c, 1);
        if (k != 1) {
            if (k < 0 && errno == EINTR)
                eintr++;
            errors++;
            return NULL;
        }
        if (c != (unsigned char)(i + r)) {
            errors++;
            return NULL;
        }
    }
    return NULL;
}

static void *writer(void *arg)
{
    (void)arg;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            unsigned char c = (unsigned char)(i + r);
            if (write(pairs[i][1], &c, 1) != 1)
                errors++;
        }
        usleep(2000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    n = argc > 1 ? atoi(argv[1]) : 1000;
    rounds = argc > 2 ? atoi(argv[2]) : 100;
    pairs = calloc((size_t)n, sizeof *pairs);
    for (int i = 0; i < n; i++)
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, pairs[i])) {
            perror("socketpair");
            return 1;
        }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    corun_co_t **cs = calloc((size_t)n + 1, sizeof *cs);
    for (int i = 0; i < n; i++)
        cs[i] = corun_spawn(reader, (void *)(intptr_t)i);
    cs[n] = corun_spawn(writer, NULL);
    for (int i = 0; i <= n; i++)
        corun_join(cs[i], NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("signals: %d readers x %d bytes, %d SIGALRMs handled, %ld errors (%ld EINTR)\n", n, rounds, (int)alarms,
           errors, eintr);
    return errors || alarms < 50 ? 1 : 0;
}
