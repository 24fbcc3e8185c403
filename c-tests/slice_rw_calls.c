/* Threads that loop on read, write, pread, pwrite, readv and writev calls
 * that never wait (a regular file, /dev/null) leave the CPU to a thread
 * that sleeps 20 ms, ten times over: natively the kernel preempts them.
 * Under corun, preemption refuses a thread whose pc is in glibc or in
 * corun, where such loops spend nearly all their time, so on one worker
 * the sleeper waited up to the loops' end (2 s and more); now such calls
 * give the worker up when their caller has held it for a slice
 * (src/sched/slice.rs), as poll and EAGAIN loops already did.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define LOOPERS 6
static atomic_int stop;
static char path[64];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *looper(void *arg) {
    long k = (long)arg;
    int rfd = open(path, O_RDONLY);
    int wfd = open("/dev/null", O_WRONLY);
    if (rfd < 0 || wfd < 0) {
        perror("open");
        exit(1);
    }
    char buf[32];
    struct iovec iov = {buf, 1};
    double t0 = now();
    while (!atomic_load(&stop) && now() - t0 < 6) {
        switch (k) {
        case 0: (void)!write(wfd, "x", 1); break;
        case 1: (void)!pwrite(wfd, "x", 1, 0); break;
        case 2: (void)!read(rfd, buf, sizeof buf); lseek(rfd, 0, SEEK_SET); break;
        case 3: (void)!pread(rfd, buf, sizeof buf, 0); break;
        case 4: (void)!readv(rfd, &iov, 1); lseek(rfd, 0, SEEK_SET); break;
        default: (void)!writev(wfd, &iov, 1); break;
        }
    }
    close(rfd);
    close(wfd);
    return NULL;
}

int main(void) {
    snprintf(path, sizeof path, "/tmp/slice_rw.%d", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) {
        perror("fopen");
        return 1;
    }
    fputs("a few bytes\n", f);
    fclose(f);
    pthread_t th[LOOPERS];
    for (long k = 0; k < LOOPERS; k++)
        pthread_create(&th[k], NULL, looper, (void *)k);
    double worst = 0;
    for (int i = 0; i < 10; i++) {
        double t = now();
        usleep(20000);
        double late = now() - t - 0.020;
        if (late > worst)
            worst = late;
    }
    atomic_store(&stop, 1);
    for (int k = 0; k < LOOPERS; k++)
        pthread_join(th[k], NULL);
    unlink(path);
    printf("10 sleeps of 20 ms beside %d threads looping on file calls: worst delay under 250 ms: %s\n",
           LOOPERS, worst < 0.25 ? "yes" : "no");
    if (worst >= 0.25)
        fprintf(stderr, "worst delay %.3f s\n", worst);
    return 0;
}
