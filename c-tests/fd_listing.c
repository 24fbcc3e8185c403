/*
 * fd_listing.c - a process lists its own fds (/proc/self/fd with opendir
 * and readdir, readdir64, fdopendir, /dev/fd, /proc/PID/fd), from main and
 * from a thread, probes every fd number with fstat and fcntl, and closes every fd it found above 2 except the
 * directory's own; then it checks that its threads and pipes still work.
 * Prints the lists: scripts/tests/fd_listing.sh requires the same output
 * natively and under corun (corun's epoll and eventfds are not listed).
 */
#define _LARGEFILE64_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void list(const char *label, DIR *d, int use64)
{
    printf("%s:", label);
    if (!d) {
        printf(" cannot open\n");
        return;
    }
    int own = dirfd(d);
    for (;;) {
        const char *name;
        if (use64) {
            struct dirent64 *e = readdir64(d);
            if (!e)
                break;
            name = e->d_name;
        } else {
            struct dirent *e = readdir(d);
            if (!e)
                break;
            name = e->d_name;
        }
        if (name[0] == '.' || atoi(name) == own)
            continue;
        printf(" %s", name);
    }
    printf("\n");
    closedir(d);
}

static void *in_thread(void *arg)
{
    (void)arg;
    list("thread /proc/self/fd", opendir("/proc/self/fd"), 0);
    return NULL;
}

static void *echo(void *arg)
{
    int *p = arg;
    char buf[16];
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n > 0)
        write(p[3], buf, (size_t)n);
    return NULL;
}

int main(void)
{
    char path[64];
    list("/proc/self/fd", opendir("/proc/self/fd"), 0);
    list("/proc/self/fd readdir64", opendir("/proc/self/fd"), 1);
    list("/dev/fd", opendir("/dev/fd"), 0);
    snprintf(path, sizeof path, "/proc/%d/fd", getpid());
    list("/proc/PID/fd", opendir(path), 0);
    list("fdopendir", fdopendir(open("/proc/self/fd", O_RDONLY | O_DIRECTORY)), 0);
    pthread_t t;
    pthread_create(&t, NULL, in_thread, NULL);
    pthread_join(t, NULL);

    /* Probe every number below 1024, as fd_status.py and closefrom
     * emulations do. */
    printf("fstat finds:");
    for (int fd = 0; fd < 1024; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0)
            printf(" %d", fd);
    }
    printf("\nfcntl(F_GETFD) finds:");
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            printf(" %d", fd);
    printf("\n");

    /* Close everything listed above 2, as a daemon does. */
    DIR *d = opendir("/proc/self/fd");
    int fds[256], n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < 256) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd > 2 && fd != dirfd(d))
            fds[n++] = fd;
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    list("after closing them", opendir("/proc/self/fd"), 0);

    /* The process still works: a thread echoes through two pipes. */
    int p[4];
    if (pipe(p) || pipe(p + 2))
        return 1;
    pthread_create(&t, NULL, echo, p);
    write(p[1], "ping", 4);
    char buf[8] = {0};
    ssize_t r = read(p[2], buf, sizeof buf - 1);
    pthread_join(t, NULL);
    printf("echo through a thread: %s\n", r == 4 ? buf : "FAILED");
    return 0;
}
