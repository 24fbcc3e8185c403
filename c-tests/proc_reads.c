/*
 * A threaded program that reads /proc files, as monitoring agents, JVMs
 * and servers' status pages do. procfs refuses RWF_NOWAIT, so each read
 * went to corun's blocking pool, two thread hand-offs for a read the
 * kernel makes from memory: an open, read and close of /proc/self/stat
 * took 10-115 us under corun against 3 us natively. Now such reads are
 * made inline (src/hooks/file.rs, `learn_reads`).
 *
 * Each of two threads reads /proc/self/stat, /proc/self/status and
 * /proc/self/cgroup 500 times (open, read, close; and once more with
 * pread at an offset) and checks what it got: the stat line starts with
 * the process's pid, status has its "Pid:" line, cgroup is not empty, the
 * pread matches the same bytes of a read. Output: "ok" and the number of
 * reads; exit 1 on a failed check.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 500

static int read_whole(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return (int)n;
}

static void *reader(void *arg)
{
    (void)arg;
    char buf[8192], want[32];
    snprintf(want, sizeof want, "%d (", getpid());
    for (int i = 0; i < ROUNDS; i++) {
        if (read_whole("/proc/self/stat", buf, sizeof buf) <= 0 || strncmp(buf, want, strlen(want)) != 0) {
            fprintf(stderr, "stat: '%.40s', want '%s'\n", buf, want);
            return (void *)1;
        }
        char pidline[32];
        snprintf(pidline, sizeof pidline, "\nPid:\t%d\n", getpid());
        if (read_whole("/proc/self/status", buf, sizeof buf) <= 0 || strstr(buf, pidline) == NULL) {
            fprintf(stderr, "status has no '%s'\n", pidline + 1);
            return (void *)1;
        }
        if (read_whole("/proc/self/cgroup", buf, sizeof buf) <= 0) {
            fprintf(stderr, "cgroup: nothing read\n");
            return (void *)1;
        }
    }
    /* pread at an offset: the same bytes as a read from the start (the
     * program's name and umask: lines that do not change between the
     * two). */
    int fd = open("/proc/self/status", O_RDONLY);
    char whole[8192], part[16];
    ssize_t n = read(fd, whole, sizeof whole);
    ssize_t m = pread(fd, part, sizeof part, 6);
    close(fd);
    if (n < 30 || m != (ssize_t)sizeof part || memcmp(whole + 6, part, sizeof part) != 0) {
        fprintf(stderr, "pread at 6 differs from the read (n %zd, m %zd)\n", n, m);
        return (void *)1;
    }
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, reader, NULL) != 0)
            return 1;
    int failed = 0;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed |= r != NULL;
    }
    if (failed)
        return 1;
    printf("ok: %d reads\n", 2 * ROUNDS * 3);
    return 0;
}
