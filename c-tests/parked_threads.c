/* parked_threads - threads that wait in known ways, for CORUN_STATS and
 * corun dump (scripts/tests/stats.sh, scripts/tests/dump.sh).
 *
 *   stats N   N threads each read one byte from a pipe of its own; main
 *             sleeps 200 ms (every reader has parked on its read by then),
 *             writes one byte to each pipe and joins them all. Each read
 *             parks once: CORUN_STATS shows N parks on fd read or more.
 *   dump      four threads wait: "reader" on a pipe read, "locker" on a
 *             mutex main holds, "sleeper" in nanosleep (1 s at a time),
 *             "joiner" in pthread_join of the reader. main prints the pipe
 *             fd, the mutex address and the coroutine-visible thread names,
 *             then "ready", and waits for a byte on stdin; then it lets
 *             every thread finish and joins them.
 * Output is the same natively (addresses and fds aside: printed on stderr).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* ---- stats ---- */

static void *read_one(void *arg)
{
    int fd = (int)(long)arg;
    char c;
    if (read(fd, &c, 1) != 1 || c != 'x')
        die("read");
    return NULL;
}

static int mode_stats(long n)
{
    pthread_t *t = calloc((size_t)n, sizeof *t);
    int(*fds)[2] = calloc((size_t)n, sizeof *fds);
    if (!t || !fds)
        die("calloc");
    for (long i = 0; i < n; i++) {
        if (pipe(fds[i]))
            die("pipe");
        if (pthread_create(&t[i], NULL, read_one, (void *)(long)fds[i][0]))
            die("pthread_create");
    }
    struct timespec d = {0, 200 * 1000 * 1000};
    nanosleep(&d, NULL);
    for (long i = 0; i < n; i++)
        if (write(fds[i][1], "x", 1) != 1)
            die("write");
    for (long i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        close(fds[i][0]);
        close(fds[i][1]);
    }
    printf("%ld threads each read their byte\n", n);
    free(t);
    free(fds);
    return 0;
}

/* ---- dump ---- */

static int pipefd[2];
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static pthread_t reader_t;

static void *reader(void *arg)
{
    (void)arg;
    char c;
    if (read(pipefd[0], &c, 1) != 1)
        die("reader read");
    return NULL;
}

static void *locker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held);
    pthread_mutex_unlock(&held);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        struct timespec d = {1, 0};
        nanosleep(&d, NULL);
    }
    return NULL;
}

static void *joiner(void *arg)
{
    (void)arg;
    if (pthread_join(reader_t, NULL))
        die("join");
    return NULL;
}

static int mode_dump(void)
{
    pthread_t t[3];
    if (pipe(pipefd))
        die("pipe");
    pthread_mutex_lock(&held);
    if (pthread_create(&reader_t, NULL, reader, NULL) || pthread_create(&t[0], NULL, locker, NULL) ||
        pthread_create(&t[1], NULL, sleeper, NULL) || pthread_create(&t[2], NULL, joiner, NULL))
        die("pthread_create");
    pthread_setname_np(reader_t, "reader");
    pthread_setname_np(t[0], "locker");
    pthread_setname_np(t[1], "sleeper");
    pthread_setname_np(t[2], "joiner");
    /* Let every thread reach its wait. */
    struct timespec d = {0, 300 * 1000 * 1000};
    nanosleep(&d, NULL);
    fprintf(stderr, "pipe fd %d\nmutex %p\n", pipefd[0], (void *)&held);
    printf("ready\n");
    fflush(stdout);
    /* read(2), not stdio: glibc's stdio reads through an internal call
     * that corun cannot interpose, which would hold main's worker. */
    char c;
    if (read(0, &c, 1) != 1)
        die("stdin");
    atomic_store(&stop, 1);
    pthread_mutex_unlock(&held);
    if (write(pipefd[1], "x", 1) != 1)
        die("write");
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("every thread finished\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "stats"))
        return mode_stats(atol(argv[2]));
    if (argc >= 2 && !strcmp(argv[1], "dump"))
        return mode_dump();
    fprintf(stderr, "usage: %s stats N | dump\n", argv[0]);
    return 2;
}
