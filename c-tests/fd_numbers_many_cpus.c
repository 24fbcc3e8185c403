/* The fd numbers a program gets are the native ones whatever the number
 * of workers (a machine of 64 CPUs runs 64 by default). 300 threads
 * compute for 20 ms each (so they spread over every worker and start its
 * thread), then, with all of them alive, main dups stdin four times and
 * opens /dev/null: natively 3, 4, 5, 6 and 7. It prints the numbers and
 * how many fds the process has open besides 0-2 (a count from
 * /proc/self/fd through a raw getdents64: readdir is interposed and
 * leaves corun's own fds out), the script compares the first line with
 * the native run and bounds the second. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 300

static pthread_barrier_t spread;

static long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
    return (b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

static void *compute(void *arg)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t1);
    while (elapsed_ns(&t0, &t1) < 20000000L);
    pthread_barrier_wait(&spread);
    return arg;
}

/* Open fds above 2, counted from the kernel's own listing. */
static int raw_fd_count(void)
{
    int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY);
    if (dir < 0) {
        perror("open /proc/self/fd");
        exit(1);
    }
    char buf[8192];
    int n = 0;
    long got;
    while ((got = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long off = 0; off < got;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            if (d->d_name[0] != '.' && atoi(d->d_name) > 2)
                n++;
            off += d->d_reclen;
        }
    }
    close(dir);
    return n - 1; /* the directory itself */
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : THREADS;
    pthread_t t[THREADS];
    if (threads > THREADS)
        threads = THREADS;
    pthread_barrier_init(&spread, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, compute, NULL) != 0) {
            fprintf(stderr, "pthread_create %d failed\n", i);
            return 1;
        }
    int fds[5];
    for (int i = 0; i < 4; i++)
        fds[i] = dup(0);
    fds[4] = open("/dev/null", O_RDONLY);
    int open_fds = raw_fd_count();
    printf("fds %d %d %d %d %d\n", fds[0], fds[1], fds[2], fds[3], fds[4]);
    printf("open %d\n", open_fds);
    if (threads > 0)
        pthread_barrier_wait(&spread);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return 0;
}
