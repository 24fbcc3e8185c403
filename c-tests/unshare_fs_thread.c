// unshare(CLONE_FS) then chdir in one thread gives that thread a working
// directory of its own (Samba's per-thread cwd): the other threads and
// main keep theirs. unshare(CLONE_FILES) likewise gives it an fd table of
// its own: an fd it opens afterwards is not another thread's (EBADF).
// NOT FIXED: under corun the unshare is the worker's, so every thread of
// that worker (on 1 worker: all, main included) shares the new cwd and
// fd table, and keeps them after the thread ended.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_barrier_t bar;
static int privfd = -1;

static void *t1(void *a) {
    (void)a;
    printf("t1 unshare(CLONE_FILES): %d\n", unshare(CLONE_FILES));
    privfd = open("/dev/null", O_RDONLY);
    printf("t1 unshare(CLONE_FS): %d\n", unshare(CLONE_FS));
    if (chdir("/tmp"))
        perror("chdir");
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    return NULL;
}

static void *t2(void *a) {
    (void)a;
    pthread_barrier_wait(&bar);
    char c[PATH_MAX];
    if (!getcwd(c, sizeof c))
        c[0] = 0;
    int r = fcntl(privfd, F_GETFD);
    printf("t2: cwd %s, t1's new fd: %s\n", c, r < 0 ? strerror(errno) : "open");
    pthread_barrier_wait(&bar);
    return NULL;
}

int main(void) {
    if (chdir("/"))
        return 1;
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t a, b;
    pthread_create(&a, NULL, t1, NULL);
    pthread_create(&b, NULL, t2, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    char c[PATH_MAX];
    if (!getcwd(c, sizeof c))
        c[0] = 0;
    printf("main: cwd %s\n", c);
    return 0;
}
