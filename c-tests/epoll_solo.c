/*
 * epoll_solo ROUNDS
 *
 * Two event-loop threads (main and one pthread), each waiting in its own
 * epoll set, as haproxy's or redis's threads do: under corun each is alone
 * on its worker and blocks in its own epoll_wait (src/hooks/epoll_solo.rs).
 * Checks what the program must see all the same:
 *  1. ping-pong: ROUNDS round trips through two pipes, each side woken by
 *     its own epoll_wait; every event is the program's (data, events);
 *  2. threads made while main waits run (one may be placed on main's
 *     worker) and their creator joins them;
 *  3. pthread_kill(main, SIGUSR1) ends main's wait with EINTR, handler run;
 *  4. a 50 ms timeout with nothing ready returns 0 after 50 ms;
 *  5. an epoll set both threads wait on delivers each byte to one of them;
 *  6. a forked child waiting in an inherited set sees only its events.
 * Prints "epoll_solo ok" and exits 0, or says what failed and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TAG0 0x1111u
#define TAG1 0x2222u
#define TAGS 0x3333u

static int to1[2], to0[2], shp[2];
static int ep0, ep1, eps;
static int rounds;
static pthread_t main_thread;
static volatile sig_atomic_t got_usr1;
static atomic_int dummy;

static void die(const char *what)
{
    fprintf(stderr, "epoll_solo: FAIL: %s (errno %d)\n", what, errno);
    exit(1);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void add(int ep, int fd, uint64_t data)
{
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = data};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) != 0)
        die("epoll_ctl");
}

/* One wait that must return exactly the event `data` (readable). */
static void wait_one(int ep, uint64_t data, int timeout)
{
    struct epoll_event ev[4];
    int n = epoll_wait(ep, ev, 4, timeout);
    if (n != 1)
        die(n == 0 ? "wait timed out" : "wait failed or returned more than asked");
    if (ev[0].data.u64 != data || ev[0].events != EPOLLIN)
        die("an event the program did not register");
}

static void *noop(void *arg)
{
    dummy += (intptr_t)arg;
    return NULL;
}

static void *other(void *arg)
{
    (void)arg;
    char b;
    /* 1: the other side of the ping-pong. */
    for (int i = 0; i < rounds; i++) {
        wait_one(ep1, TAG1, 5000);
        if (read(to1[0], &b, 1) != 1 || b != (char)i)
            die("ping byte");
        if (write(to0[1], &b, 1) != 1)
            die("pong write");
    }
    /* 2: threads made while main waits, then wake main. */
    usleep(20000);
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, noop, (void *)(intptr_t)1) != 0)
            die("pthread_create");
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    b = 'w';
    if (write(to0[1], &b, 1) != 1)
        die("wake write");
    /* 3: a signal for main while it waits. */
    usleep(50000);
    pthread_kill(main_thread, SIGUSR1);
    /* 5: read shared bytes as they come. */
    int got = 0;
    while (got < 200) {
        struct epoll_event ev[4];
        int n = epoll_wait(eps, ev, 4, 5000);
        if (n <= 0)
            die("shared set: nothing within 5 s");
        for (int k = 0; k < n; k++)
            if (ev[k].data.u64 != TAGS)
                die("shared set: an event the program did not register");
        while (read(shp[0], &b, 1) == 1)
            got++;
    }
    return NULL;
}

static void on_usr1(int sig)
{
    (void)sig;
    got_usr1 = 1;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atoi(argv[1]) : 2000;
    main_thread = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    if (pipe(to1) || pipe(to0) || pipe2(shp, O_NONBLOCK))
        die("pipe");
    ep0 = epoll_create1(0);
    ep1 = epoll_create1(0);
    eps = epoll_create1(0);
    add(ep0, to0[0], TAG0);
    add(ep1, to1[0], TAG1);
    add(eps, shp[0], TAGS);
    pthread_t t;
    if (pthread_create(&t, NULL, other, NULL) != 0)
        die("pthread_create");
    char b;
    for (int i = 0; i < rounds; i++) {
        b = (char)i;
        if (write(to1[1], &b, 1) != 1)
            die("ping write");
        wait_one(ep0, TAG0, 5000);
        if (read(to0[0], &b, 1) != 1 || b != (char)i)
            die("pong byte");
    }
    /* 2 */
    wait_one(ep0, TAG0, 5000);
    if (read(to0[0], &b, 1) != 1 || b != 'w' || dummy != 8)
        die("wake after the threads");
    /* 3 */
    struct epoll_event ev[4];
    double t0 = now_ms();
    int n = epoll_wait(ep0, ev, 4, 5000);
    if (n != -1 || errno != EINTR || !got_usr1 || now_ms() - t0 > 2500)
        die("SIGUSR1 did not end the wait with EINTR");
    /* 4 */
    t0 = now_ms();
    n = epoll_wait(ep0, ev, 4, 50);
    double el = now_ms() - t0;
    if (n != 0 || el < 49 || el > 1000)
        die("50 ms timeout");
    /* 5: main waits on the shared set too, between writes. */
    for (int i = 0; i < 200; i++) {
        b = 's';
        if (write(shp[1], &b, 1) != 1)
            die("shared write");
        n = epoll_wait(eps, ev, 4, i % 2);
        for (int k = 0; k < n; k++)
            if (ev[k].data.u64 != TAGS)
                die("shared set (main): an event the program did not register");
    }
    pthread_join(t, NULL);
    /* 6 */
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        n = epoll_wait(ep0, ev, 4, 30);
        if (n != 0)
            _exit(2);
        b = 'c';
        if (write(to0[1], &b, 1) != 1)
            _exit(3);
        n = epoll_wait(ep0, ev, 4, 1000);
        _exit(n == 1 && ev[0].data.u64 == TAG0 ? 0 : 4);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("forked child's waits");
    printf("epoll_solo ok: %d round trips\n", rounds);
    return 0;
}
