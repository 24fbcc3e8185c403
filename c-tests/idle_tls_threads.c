/*
 * idle_tls_threads N
 *
 * Starts N threads that each block in read() on one pipe (idle, as a
 * keep-alive connection's thread waits for its next request), then prints
 * the growth of the process's RSS per thread:
 *   rss_per_thread <bytes>
 * and ends them all (the pipe's write end is closed: each read sees EOF).
 * scripts/tests/tls_block_pages.sh compares the figure with and without
 * a TLS block per thread under corun.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fds[2];
static atomic_int started;

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            v = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static void *idle(void *arg)
{
    (void)arg;
    char c;
    atomic_fetch_add(&started, 1);
    ssize_t r = read(fds[0], &c, 1);
    return (void *)(long)r;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!t || pipe(fds)) {
        perror("setup");
        return 1;
    }
    long before = rss_kib();
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, idle, NULL)) {
            fprintf(stderr, "pthread_create failed at %d\n", i);
            return 1;
        }
    while (atomic_load(&started) < n)
        usleep(1000);
    usleep(100000); /* the last ones reach their read */
    long after = rss_kib();
    printf("rss_per_thread %ld\n", (after - before) * 1024 / n);
    close(fds[1]);
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        if ((long)r != 0) {
            fprintf(stderr, "thread %d: read returned %ld, expected EOF\n", i, (long)r);
            return 1;
        }
    }
    free(t);
    return 0;
}
