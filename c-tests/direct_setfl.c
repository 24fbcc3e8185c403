/*
 * direct_setfl - O_DIRECT given to a file by fcntl(F_SETFL) after it was
 * written buffered.
 *
 * `direct_setfl probe DIR` says whether DIR's filesystem refuses
 * RWF_NOWAIT for buffered writes and takes O_DIRECT: only there does corun
 * make small buffered writes inline (hooks/file.rs), the decision this
 * program checks is learned again.
 *
 * `direct_setfl run DIR N`: opens DIR/direct_setfl.dat without O_DIRECT,
 * writes a small record (under corun that write is made inline and the
 * decision kept for the fd), sets O_DIRECT with F_SETFL, then makes N
 * aligned 4 KiB writes, each of its own byte value, and reads the file
 * back and checks every byte. Each O_DIRECT write waits for the device;
 * under corun it must go to the blocking pool (the script counts the
 * hand-offs), not wait on the worker. The run is made by a thread (under
 * corun a coroutine: a process's lone main thread makes its calls itself).
 */
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define BLOCK 4096

static int probe(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/direct_setfl.probe", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        printf("no: open: %s\n", strerror(errno));
        return 0;
    }
    char b[16] = "probe";
    struct iovec iov = {b, 5};
    int refused = pwritev2(fd, &iov, 1, 0, RWF_NOWAIT) < 0 && errno == EOPNOTSUPP;
    int direct = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) == 0;
    close(fd);
    unlink(path);
    printf("%s: buffered RWF_NOWAIT %s, O_DIRECT %s\n", refused && direct ? "yes" : "no",
           refused ? "refused" : "taken", direct ? "taken" : "refused");
    return 0;
}

static const char *dir;
static int n;

static int run(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/direct_setfl.dat", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        printf("FAIL: open: %s\n", strerror(errno));
        return 1;
    }
    char record[64];
    memset(record, 'r', sizeof record);
    if (write(fd, record, sizeof record) != (ssize_t)sizeof record) {
        printf("FAIL: buffered write\n");
        return 1;
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) != 0) {
        printf("FAIL: F_SETFL O_DIRECT: %s\n", strerror(errno));
        return 1;
    }
    unsigned char *buf;
    if (posix_memalign((void **)&buf, BLOCK, BLOCK) != 0)
        return 1;
    for (int i = 0; i < n; i++) {
        memset(buf, 'A' + i % 26, BLOCK);
        ssize_t w = pwrite(fd, buf, BLOCK, (off_t)(i + 1) * BLOCK);
        if (w != BLOCK) {
            printf("FAIL: O_DIRECT write %d: %zd (%s)\n", i, w, w < 0 ? strerror(errno) : "short");
            return 1;
        }
    }
    int bad = 0;
    for (int i = 0; i <= n; i++) {
        if (pread(fd, buf, BLOCK, (off_t)i * BLOCK) != BLOCK) {
            printf("FAIL: read back block %d\n", i);
            return 1;
        }
        for (int j = 0; j < BLOCK; j++) {
            int want = i == 0 ? (j < (int)sizeof record ? 'r' : 0) : 'A' + (i - 1) % 26;
            if (buf[j] != want)
                bad++;
        }
    }
    close(fd);
    unlink(path);
    if (bad) {
        printf("FAIL: %d bytes differ\n", bad);
        return 1;
    }
    printf("a buffered record, then %d O_DIRECT writes after F_SETFL: every byte read back\n", n);
    return 0;
}

static void *runner(void *arg)
{
    (void)arg;
    return (void *)(long)run();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "probe") == 0)
        return probe(argv[2]);
    if (argc != 4 || strcmp(argv[1], "run") != 0) {
        fprintf(stderr, "usage: direct_setfl probe DIR | run DIR N\n");
        return 2;
    }
    dir = argv[2];
    n = atoi(argv[3]);
    pthread_t t;
    void *rc;
    if (pthread_create(&t, NULL, runner, NULL) != 0 || pthread_join(t, &rc) != 0)
        return 1;
    return (int)(long)rc;
}
