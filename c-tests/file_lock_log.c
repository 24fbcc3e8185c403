/*
 * file_lock_log - a logger's pattern: lock a file, append a line, unlock,
 * as Kea's log4cplus appender does for every line (fcntl F_SETLKW around
 * each write), here with fcntl, OFD locks, flock and lockf, from two
 * threads (so the calls park under corun). Then a lock held by a child
 * process for 300 ms: the thread that wants it waits while the other
 * thread keeps counting, and gets it once the child lets go.
 *
 * Prints what it checked (the file's lines, every lock result); identical
 * natively and under corun. scripts/tests/file_lock_log.sh also reads
 * corun's statistics: uncontended locks, unlocks and small appends are
 * answered inline, not handed to the blocking pool.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINES 500

static const char *path;
static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL: %s (errno %d)\n", what, errno);
        failures++;
    }
}

static int setlk(int fd, int cmd, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    return fcntl(fd, cmd, &fl);
}

static void *logger(void *arg)
{
    long id = (long)arg;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    check(fd >= 0, "open");
    char line[96];
    for (int i = 0; i < LINES; i++) {
        int n = snprintf(line, sizeof line, "thread %ld line %03d %s\n", id, i, "................................");
        switch (i % 4) {
        case 0:
            check(setlk(fd, F_SETLKW, F_WRLCK) == 0, "F_SETLKW lock");
            check(write(fd, line, n) == n, "write");
            check(setlk(fd, F_SETLKW, F_UNLCK) == 0, "F_SETLKW unlock");
            break;
        case 1:
            check(setlk(fd, F_OFD_SETLKW, F_WRLCK) == 0, "F_OFD_SETLKW lock");
            check(write(fd, line, n) == n, "write");
            check(setlk(fd, F_OFD_SETLKW, F_UNLCK) == 0, "F_OFD_SETLKW unlock");
            break;
        case 2:
            check(flock(fd, LOCK_EX) == 0, "flock");
            check(write(fd, line, n) == n, "write");
            check(flock(fd, LOCK_UN) == 0, "flock unlock");
            break;
        case 3:
            check(lockf(fd, F_LOCK, 0) == 0, "lockf");
            check(write(fd, line, n) == n, "write");
            check(lockf(fd, F_ULOCK, 0) == 0, "lockf unlock");
            break;
        }
    }
    close(fd);
    return NULL;
}

static volatile int counting = 1;
static long counted;

static void *counter(void *arg)
{
    (void)arg;
    while (counting) {
        struct timespec d = {0, 1000 * 1000};
        nanosleep(&d, NULL);
        counted++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: file_lock_log FILE\n");
        return 2;
    }
    path = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    unlink(path);
    pthread_t a, b;
    pthread_create(&a, NULL, logger, (void *)1L);
    pthread_create(&b, NULL, logger, (void *)2L);
    pthread_join(a, NULL);
    pthread_join(b, NULL);

    /* Every line whole: count them per thread. */
    FILE *f = fopen(path, "r");
    char buf[128];
    int lines[3] = {0, 0, 0}, bad = 0;
    while (fgets(buf, sizeof buf, f)) {
        long id;
        int i;
        if (sscanf(buf, "thread %ld line %d", &id, &i) == 2 && (id == 1 || id == 2) && strlen(buf) == 51)
            lines[id]++;
        else
            bad++;
    }
    fclose(f);
    printf("lines: thread 1 %d, thread 2 %d, malformed %d\n", lines[1], lines[2], bad);
    check(lines[1] == LINES && lines[2] == LINES && bad == 0, "every line whole");

    /* A lock a child holds for 300 ms: waited for, parked. */
    int fd = open(path, O_WRONLY);
    int go[2];
    check(pipe(go) == 0, "pipe");
    pid_t child = fork();
    if (child == 0) {
        int cfd = open(path, O_WRONLY);
        setlk(cfd, F_SETLKW, F_WRLCK);
        char c = 1;
        if (write(go[1], &c, 1) != 1)
            _exit(1);
        struct timespec d = {0, 300 * 1000 * 1000};
        nanosleep(&d, NULL);
        _exit(0);
    }
    char c;
    check(read(go[0], &c, 1) == 1, "child ready");
    pthread_t t;
    pthread_create(&t, NULL, counter, NULL);
    check(setlk(fd, F_SETLK, F_WRLCK) == -1 && (errno == EAGAIN || errno == EACCES), "F_SETLK on a held lock fails");
    check(setlk(fd, F_SETLKW, F_WRLCK) == 0, "F_SETLKW waits for the child's lock");
    counting = 0;
    pthread_join(t, NULL);
    printf("the counting thread ran while the lock was waited for: %s\n", counted > 10 ? "yes" : "no");
    check(setlk(fd, F_SETLKW, F_UNLCK) == 0, "unlock");
    int st;
    waitpid(child, &st, 0);
    close(fd);
    if (failures)
        return 1;
    printf("file_lock_log: all checks passed\n");
    return 0;
}
