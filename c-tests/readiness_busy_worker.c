/*
 * readiness_busy_worker - data for a reader reaches it while the thread
 * that waited on the same fd first computes without a pause.
 *
 * main waits on a pipe first (a poll that times out), so under corun the
 * pipe is known to main's worker. A reader thread then reads the pipe; a
 * forked child writes to it 350 ms after the start, while main computes
 * for 2 s without a single call. Natively, and under corun with two or
 * more workers (the reader lives on another worker than main), the read
 * returns at about 350 ms; with one worker it cannot return before main
 * stops computing. Prints the bytes read (stdout, the same everywhere) and
 * the time the read returned (stderr: the test bounds it).
 */
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WRITE_AT_MS 350
#define COMPUTE_MS 2000

static int fds[2];
static sem_t go;
static long read_ms;
static char got[64];

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static long t0;

static void *reader(void *arg)
{
    (void)arg;
    while (sem_wait(&go) != 0)
        ;
    ssize_t n = read(fds[0], got, sizeof got - 1);
    read_ms = now_ms() - t0;
    if (n < 0) {
        perror("read");
        exit(1);
    }
    got[n] = 0;
    return NULL;
}

int main(void)
{
    t0 = now_ms();
    if (pipe(fds) != 0 || sem_init(&go, 0, 0) != 0) {
        perror("setup");
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        struct timespec ts = {0, 0};
        long left = WRITE_AT_MS - (now_ms() - t0);
        if (left > 0) {
            ts.tv_sec = left / 1000;
            ts.tv_nsec = (left % 1000) * 1000000L;
            nanosleep(&ts, NULL);
        }
        const char msg[] = "data at 350 ms";
        _exit(write(fds[1], msg, sizeof msg - 1) == (ssize_t)(sizeof msg - 1) ? 0 : 1);
    }
    close(fds[1]);
    pthread_t r;
    if (pthread_create(&r, NULL, reader, NULL) != 0) {
        perror("pthread_create");
        return 1;
    }
    /* main waits on the pipe first: nothing comes within 20 ms. */
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    int pr = poll(&p, 1, 20);
    if (pr != 0) {
        fprintf(stderr, "poll: %d, expected a timeout\n", pr);
        return 1;
    }
    sem_post(&go);
    /* Then computes, with no call a scheduler could use. */
    volatile unsigned long spin = 0;
    while (now_ms() - t0 < COMPUTE_MS)
        for (int i = 0; i < 100000; i++)
            spin++;
    pthread_join(r, NULL);
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "the writer failed\n");
        return 1;
    }
    printf("read \"%s\"\n", got);
    fprintf(stderr, "read returned at %ld ms (written at %d ms, main computed until %d ms)\n",
            read_ms, WRITE_AT_MS, COMPUTE_MS);
    return 0;
}
