/*
 * sig_kick_alone: a signal that another thread of the process receives
 * reaches the only thread that takes it, while that thread waits in
 * nanosleep, as natively.
 *
 * The program makes a thread and joins it, so that under corun a second
 * worker exists while main is again the process's only coroutine (its
 * calls then block as natively, `sched::parking`). SIGUSR2 is then sent to
 * a thread of the process other than main that does not block it (read
 * from /proc/self/task/TID/status; natively none is left, and the signal
 * goes to the process with kill). corun hands it to main, and main, asleep
 * in nanosleep, must run its handler: the sleep ends with EINTR and the
 * handler has run. Each round waits at most 5 s (a loaded machine) for it.
 *
 * Prints one line per round, and a summary; exits 1 if a handler never ran.
 * On stderr: how many rounds signalled another thread (none natively).
 * With an argument, each round first waits (up to 5 s) for another thread
 * that takes SIGUSR2 (corun's second worker starts on its own time, and
 * blocks the signal while its handler for the last one returns).
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20

static volatile sig_atomic_t handled;
static void on_usr2(int s) { (void)s; handled++; }

static void *nothing(void *arg) { return arg; }

/* Whether thread `tid`'s status says it does not block SIGUSR2. */
static int takes_usr2(const char *tid)
{
    char path[320], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int open = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long blk;
        if (sscanf(line, "SigBlk: %llx", &blk) == 1) {
            open = !(blk & (1ULL << (SIGUSR2 - 1)));
            break;
        }
    }
    fclose(f);
    return open;
}

/* A thread of this process other than main that takes SIGUSR2, or 0. */
static pid_t other_thread(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    pid_t found = 0, me = getpid();
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid > 0 && tid != me && takes_usr2(e->d_name))
            found = tid;
    }
    closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    (void)argv;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR2, &sa, NULL) != 0) {
        perror("sigaction");
        return 2;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, nothing, NULL) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "thread\n");
        return 2;
    }
    int ok = 0, others = 0;
    for (int round = 0; round < ROUNDS; round++) {
        int before = handled;
        pid_t tid = other_thread();
        for (int i = 0; argc > 1 && i < 500 && tid == 0; i++) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
            tid = other_thread();
        }
        if (tid > 0) {
            others++;
            syscall(SYS_tgkill, getpid(), tid, SIGUSR2);
        } else
            kill(getpid(), SIGUSR2);
        /* Up to 5 s in 10 ms sleeps. */
        for (int i = 0; i < 500 && handled == before; i++) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (handled == before) {
            printf("round %d: SIGUSR2 not handled within 5 s\n", round);
            break;
        }
        printf("round %d: SIGUSR2 handled\n", round);
        ok++;
    }
    printf("%d of %d rounds handled\n", ok, ROUNDS);
    fprintf(stderr, "rounds that signalled another thread: %d\n", others);
    return ok == ROUNDS ? 0 : 1;
}
