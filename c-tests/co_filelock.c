/*
 * co_filelock PATH: waiting for a file lock held by another process
 * (flock, then fcntl F_SETLKW) must not hold the worker: a ticker coroutine
 * keeps ticking every millisecond while main waits ~300 ms for each lock.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <corun.h>

static volatile int stop;
static long ticks;
static void *ticker(void *a)
{
    (void)a;
    while (!stop) {
        usleep(1000);
        ticks++;
    }
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
    int go[2];
    if (fd < 0 || pipe(go))
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        int cfd = open(argv[1], O_RDWR);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        flock(cfd, LOCK_EX);
        fcntl(cfd, F_SETLK, &fl);
        if (write(go[1], "x", 1) != 1)
            _exit(1);
        usleep(300000);
        flock(cfd, LOCK_UN);
        usleep(300000);
        _exit(0); /* releases the record lock */
    }
    char c;
    if (read(go[0], &c, 1) != 1)
        return 1;
    corun_co_t *t = corun_spawn(ticker, NULL);
    double t0 = now_ms();
    int r1 = flock(fd, LOCK_EX);
    double t1 = now_ms();
    long ticks1 = ticks;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    int r2 = fcntl(fd, F_SETLKW, &fl);
    double t2 = now_ms();
    long ticks2 = ticks - ticks1;
    stop = 1;
    corun_join(t, NULL);
    waitpid(pid, NULL, 0);
    printf("filelock: flock waited %.0f ms (ticker %ld ticks), F_SETLKW waited %.0f ms (ticker %ld ticks), results %d %d\n",
           t1 - t0, ticks1, t2 - t1, ticks2, r1, r2);
    return r1 == 0 && r2 == 0 && t1 - t0 > 200 && t2 - t1 > 200 && ticks1 > 100 && ticks2 > 100 ? 0 : 1;
}
