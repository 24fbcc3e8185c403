/*
 * co_closeall: a daemon-style "close every fd" (closefrom, close_range, a
 * close() loop up to the fd limit) must not break corun, whose own epoll
 * and eventfds live among those numbers: afterwards coroutines still park
 * and wake (a sleep, a socketpair ping-pong across coroutines).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/close_range.h>

#include <corun.h>

static int sv[2];
static void *pong(void *a)
{
    (void)a;
    char c;
    for (int i = 0; i < 100; i++) {
        if (read(sv[1], &c, 1) != 1 || write(sv[1], &c, 1) != 1)
            return (void *)1;
    }
    return NULL;
}

static int exercise(const char *what)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return 1;
    corun_co_t *p = corun_spawn(pong, NULL);
    char c = 'x';
    for (int i = 0; i < 100; i++) {
        usleep(100);
        if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1) {
            printf("%s: ping-pong failed\n", what);
            return 1;
        }
    }
    void *r;
    corun_join(p, &r);
    close(sv[0]);
    close(sv[1]);
    printf("%s: coroutines still park and wake\n", what);
    return r != NULL;
}

int main(void)
{
    int bad = exercise("before");
    closefrom(3);
    bad |= exercise("after closefrom(3)");
    close_range(3, ~0U, 0);
    bad |= exercise("after close_range(3, ~0U)");
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    for (int fd = 3; fd < (int)rl.rlim_cur; fd++)
        close(fd);
    bad |= exercise("after close() of every fd");
    return bad;
}
