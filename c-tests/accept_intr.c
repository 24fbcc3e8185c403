/* A signal for a thread blocked in accept on a listener another process
 * shares (the fd number in argv[1], inherited from the driver,
 * scripts/tests/accept_intr.sh, which takes the connection the thread saw
 * pending: the thread then waits in accept for the next one).
 *
 * argv[2] says which signal and what must happen:
 *   eintr    SIGUSR1, handler without SA_RESTART: accept returns -1/EINTR
 *            within 100 ms of pthread_kill;
 *   restart  SIGUSR1, handler with SA_RESTART: the handler runs (within
 *            1 s), accept goes on waiting (300 ms more), then returns the
 *            driver's next
 *            connection, whose bytes are checked;
 *   term     SIGTERM at its default action: the driver kills the process
 *            and times its end;
 *   rtmax    as eintr, then SIGRTMAX (which corun uses for itself) must
 *            still look unset and end the process when sent.
 * Protocol on stdin/stdout: prints "ready PID", then "conn" for each
 * connection its accept got before the signal (the driver's race was
 * lost: the driver tries again); reads "kill" from stdin, then sends the
 * signal and prints what happened. Exit 0 when the mode's outcome held. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int lfd;
static atomic_int handled;
static atomic_int killed;
static atomic_int done;
static int result, result_errno;
static char got[64];

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

static void *acceptor(void *arg) {
    (void)arg;
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c >= 0 && !atomic_load(&killed)) {
            /* The driver's race was lost: this one came through. */
            printf("conn\n");
            fflush(stdout);
            close(c);
            continue;
        }
        result = c;
        result_errno = errno;
        if (c >= 0) {
            ssize_t n, off = 0;
            while (off < (ssize_t)sizeof got - 1 &&
                   (n = read(c, got + off, sizeof got - 1 - off)) > 0)
                off += n;
            got[off] = 0;
            close(c);
        }
        atomic_store(&done, 1);
        return NULL;
    }
}

/* Waits up to `ms` for the acceptor to return. */
static int wait_done(double ms) {
    double end = now_ms() + ms;
    while (!atomic_load(&done) && now_ms() < end) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(&done);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: accept_intr LISTENER_FD eintr|restart|term|rtmax\n");
        return 2;
    }
    lfd = atoi(argv[1]);
    const char *mode = argv[2];
    int restart = strcmp(mode, "restart") == 0;
    if (strcmp(mode, "term") != 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sa.sa_flags = restart ? SA_RESTART : 0;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGUSR1, &sa, NULL) != 0)
            return 2;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, acceptor, NULL) != 0)
        return 2;
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    char line[32];
    if (!fgets(line, sizeof line, stdin) || strncmp(line, "kill", 4) != 0)
        return 2;
    atomic_store(&killed, 1);
    if (strcmp(mode, "term") == 0) {
        /* The driver sends SIGTERM; nothing here may outlive it. */
        pause();
        return 1;
    }
    double t0 = now_ms();
    pthread_kill(t, SIGUSR1);
    if (!restart) {
        int ok = wait_done(1000);
        double ms = now_ms() - t0;
        if (!ok) {
            printf("FAIL: accept still waiting 1 s after the signal (handler ran %d)\n",
                   atomic_load(&handled));
            fflush(stdout);
            _exit(1);
        }
        printf("accept returned %d (%s) after %.1f ms, handler ran %d\n", result,
               strerror(result_errno), ms, atomic_load(&handled));
        int ok_intr = result == -1 && result_errno == EINTR && ms < 100 &&
                      atomic_load(&handled) == 1;
        if (!ok_intr || strcmp(mode, "rtmax") != 0)
            return ok_intr ? 0 : 1;
        /* SIGRTMAX, which corun may use for itself, is still the
         * program's: no action set, and its default ends the process. */
        struct sigaction old;
        if (sigaction(SIGRTMAX, NULL, &old) != 0 || old.sa_handler != SIG_DFL) {
            printf("FAIL: sigaction reports another action than SIG_DFL for SIGRTMAX\n");
            return 1;
        }
        printf("SIGRTMAX at SIG_DFL; sending it\n");
        fflush(stdout);
        kill(getpid(), SIGRTMAX);
        sleep(2);
        printf("FAIL: alive 2 s after SIGRTMAX\n");
        return 1;
    }
    /* SA_RESTART: the handler runs (up to 1 s on a loaded machine),
     * and the accept goes on. */
    for (double end = now_ms() + 1000; !atomic_load(&handled) && now_ms() < end;) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    wait_done(300);
    if (atomic_load(&done)) {
        printf("FAIL: accept returned %d (%s) after an SA_RESTART handler\n", result,
               strerror(result_errno));
        return 1;
    }
    /* Read once: the driver connects as soon as it reads the line (after
     * which a handler held back until the accept returns would run). */
    int handled_while_waiting = atomic_load(&handled);
    printf("handled %d, still waiting\n", handled_while_waiting);
    fflush(stdout);
    if (handled_while_waiting != 1) {
        /* Natively the handler runs at once, then accept restarts. */
        printf("FAIL: the handler did not run while accept waited\n");
        fflush(stdout);
        _exit(1);
    }
    if (!wait_done(5000)) {
        printf("FAIL: no connection accepted after the restart\n");
        fflush(stdout);
        _exit(1);
    }
    printf("accept returned a connection: \"%s\"\n", got);
    return result >= 0 && strcmp(got, "bytes after the restart") == 0 &&
                   atomic_load(&handled) == 1
               ? 0
               : 1;
}
