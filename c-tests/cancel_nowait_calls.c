/* A cancellation request acts at the next cancellation point even when
 * that call has nothing to wait for: glibc's read, write, readv, writev,
 * pread, pwrite, open, openat and close check for a pending request
 * before they make the system call (pthreads(7), "Cancellation points").
 *
 * Each thread gets the request while its cancellation is disabled, then
 * enables it and makes one such call on a regular file (or /dev/null),
 * which never blocks, 1,000 times. Natively the first call acts: the join
 * returns PTHREAD_CANCELED and no call completed.
 * netdata's proc plugin reads /proc files so: under corun the request
 * was acted on only at the next wait; the thread left its loop by its own
 * test, ran its cleanup handler by pthread_cleanup_pop(1), and the
 * pthread_join in that handler acted on the request, skipping the rest of
 * the handler (netdata then waited 5 s for a flag the handler never set).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

enum kind { K_READ, K_WRITE, K_READV, K_WRITEV, K_PREAD, K_PWRITE, K_OPEN, K_OPENAT, K_CLOSE, K_COUNT };
static const char *names[K_COUNT] = {"read", "write", "readv", "writev", "pread",
                                     "pwrite", "open", "openat", "close"};

static char path[64];
static atomic_int requested;
static atomic_int started[K_COUNT];
static long after[K_COUNT]; /* calls made with cancellation enabled */

static int failed;

static void one_call(enum kind k, int rfd, int wfd) {
    char buf[64];
    struct iovec iov = {buf, sizeof buf};
    int fd;
    switch (k) {
    case K_READ: (void)!read(rfd, buf, sizeof buf); lseek(rfd, 0, SEEK_SET); break;
    case K_WRITE: (void)!write(wfd, "x", 1); break;
    case K_READV: (void)!readv(rfd, &iov, 1); lseek(rfd, 0, SEEK_SET); break;
    case K_WRITEV: iov.iov_len = 1; (void)!writev(wfd, &iov, 1); break;
    case K_PREAD: (void)!pread(rfd, buf, sizeof buf, 0); break;
    case K_PWRITE: (void)!pwrite(wfd, "x", 1, 0); break;
    case K_OPEN:
        fd = open(path, O_RDONLY);
        if (fd >= 0) {
            int old;
            /* Only the open is tested: this close must not act. */
            pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
            close(fd);
            pthread_setcancelstate(old, NULL);
        }
        break;
    case K_OPENAT:
        fd = openat(AT_FDCWD, path, O_RDONLY);
        if (fd >= 0) {
            int old;
            pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
            close(fd);
            pthread_setcancelstate(old, NULL);
        }
        break;
    case K_CLOSE: {
        int old;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
        fd = open(path, O_RDONLY);
        pthread_setcancelstate(old, NULL);
        if (fd >= 0)
            close(fd);
        break;
    }
    default: break;
    }
}

static void *looper(void *arg) {
    enum kind k = (enum kind)(long)arg;
    int rfd = open(path, O_RDONLY);
    int wfd = open("/dev/null", O_WRONLY);
    if (rfd < 0 || wfd < 0) {
        perror("open");
        exit(1);
    }
    /* The request comes while cancellation is disabled (sched_yield is
     * no cancellation point); enabling it does not act by itself (the
     * type is deferred): the first call after does. */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    atomic_store(&started[k], 1);
    while (!atomic_load(&requested))
        sched_yield();
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    for (int i = 0; i < 1000; i++) {
        one_call(k, rfd, wfd);
        after[k]++;
    }
    return (void *)1;
}

int main(void) {
    snprintf(path, sizeof path, "/tmp/cancel_nowait.%d", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) {
        perror("fopen");
        return 1;
    }
    fputs("some bytes to read again and again\n", f);
    fclose(f);

    pthread_t th[K_COUNT];
    for (int k = 0; k < K_COUNT; k++)
        pthread_create(&th[k], NULL, looper, (void *)(long)k);
    for (int k = 0; k < K_COUNT; k++)
        while (!atomic_load(&started[k]))
            usleep(1000);
    for (int k = 0; k < K_COUNT; k++)
        pthread_cancel(th[k]);
    atomic_store(&requested, 1);
    for (int k = 0; k < K_COUNT; k++) {
        void *r;
        pthread_join(th[k], &r);
        printf("%s: %s, calls completed after enabling: %s\n", names[k],
               r == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled (ran to its end)",
               after[k] == 0 ? "none" : "some");
        if (r != PTHREAD_CANCELED || after[k] != 0)
            failed = 1;
    }

    unlink(path);
    if (!failed)
        printf("cancel_nowait_calls: all checks passed\n");
    return 0;
}
