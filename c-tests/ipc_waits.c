/*
 * ipc_waits.c - waits on message queues and System V semaphores, each
 * ended by another process 200 ms later, while a ticker thread counts
 * 1 ms sleeps: under corun (one worker) the ticker must keep running
 * during every wait (the wait parks its coroutine, src/hooks/ipc.rs).
 * Also: timeouts (semtimedop EAGAIN, mq_timedreceive ETIMEDOUT), a queue
 * removed under a waiter (EIDRM), a handler without SA_RESTART (EINTR),
 * and errors the kernel gives at once (EFAULT, EINVAL, IPC_NOWAIT).
 *
 * Prints one line per fact; scripts/tests/ipc_waits.sh requires the same
 * lines natively and under corun.
 */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ticker.h"


/* Runs `act` in a child process after 200 ms. */
static pid_t later(void (*act)(long), long arg)
{
    pid_t p = fork();
    if (p == 0) {
        usleep(200000);
        ticker_await();
        act(arg);
        _exit(0);
    }
    return p;
}

static void reap(pid_t p)
{
    int st;
    waitpid(p, &st, 0);
}

struct msg {
    long type;
    char text[8];
};

static void send_msg(long q)
{
    struct msg m = {.type = 1};
    strcpy(m.text, "abc");
    msgsnd((int)q, &m, sizeof m.text, 0);
}
static void take_msg(long q)
{
    struct msg m;
    msgrcv((int)q, &m, sizeof m.text, 0, 0);
}
static void remove_q(long q) { msgctl((int)q, IPC_RMID, NULL); }
static void sem_post1(long s)
{
    struct sembuf op = {.sem_num = 0, .sem_op = 1, .sem_flg = 0};
    semop((int)s, &op, 1);
}
static void mq_put(long q) { mq_send((mqd_t)q, "hey", 4, 0); }
static void mq_take(long q)
{
    char b[64];
    mq_receive((mqd_t)q, b, sizeof b, NULL);
}

/* The ticker ran during the last wait (at least 5 ticks of 1 ms in 200). */
static void ticked(const char *what, long before) { ticker_report(what, before, 5); }

static void on_alarm(int sig) { (void)sig; }

int main(void)
{
    ticker_start(1000, 20000);

    /* System V message queue: msgrcv waits for a message. */
    int q = msgget(IPC_PRIVATE, 0600);
    struct msg m;
    long t0 = ticker_now();
    pid_t p = later(send_msg, q);
    ssize_t r = msgrcv(q, &m, sizeof m.text, 0, 0);
    printf("msgrcv: %zd %s\n", r, r > 0 ? m.text : strerror(errno));
    ticked("msgrcv", t0);
    reap(p);
    /* msgsnd waits while the queue is full. */
    struct msqid_ds ds;
    msgctl(q, IPC_STAT, &ds);
    ds.msg_qbytes = sizeof m.text;
    msgctl(q, IPC_SET, &ds);
    send_msg(q);
    t0 = ticker_now();
    p = later(take_msg, q);
    m.type = 1;
    strcpy(m.text, "def");
    printf("msgsnd on a full queue: %d\n", msgsnd(q, &m, sizeof m.text, 0));
    ticked("msgsnd", t0);
    reap(p);
    r = msgrcv(q, &m, sizeof m.text, 0, 0);
    printf("then msgrcv: %s\n", r > 0 ? m.text : strerror(errno));
    errno = 0;
    r = msgrcv(q, &m, sizeof m.text, 0, IPC_NOWAIT);
    printf("msgrcv IPC_NOWAIT, empty: %zd %s\n", r, strerrorname_np(errno));
    /* The queue removed under a waiter. */
    p = later(remove_q, q);
    errno = 0;
    r = msgrcv(q, &m, sizeof m.text, 0, 0);
    printf("msgrcv, queue removed meanwhile: %zd %s\n", r, strerrorname_np(errno));
    reap(p);
    /* A handler without SA_RESTART ends the wait with EINTR. */
    q = msgget(IPC_PRIVATE, 0600);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    errno = 0;
    r = msgrcv(q, &m, sizeof m.text, 0, 0);
    printf("msgrcv, SIGALRM handler: %zd %s\n", r, strerrorname_np(errno));
    msgctl(q, IPC_RMID, NULL);

    /* System V semaphore. */
    int s = semget(IPC_PRIVATE, 1, 0600);
    struct sembuf down = {.sem_num = 0, .sem_op = -1, .sem_flg = 0};
    t0 = ticker_now();
    p = later(sem_post1, s);
    printf("semop waits for a post: %d\n", semop(s, &down, 1));
    ticked("semop", t0);
    reap(p);
    struct timespec tmo = {0, 150000000};
    t0 = ticker_now();
    errno = 0;
    int sr = semtimedop(s, &down, 1, &tmo);
    printf("semtimedop, 150 ms, nobody posts: %d %s\n", sr, strerrorname_np(errno));
    ticked("semtimedop", t0);
    struct sembuf down_nowait = {.sem_num = 0, .sem_op = -1, .sem_flg = IPC_NOWAIT};
    errno = 0;
    sr = semop(s, &down_nowait, 1);
    printf("semop IPC_NOWAIT: %d %s\n", sr, strerrorname_np(errno));
    errno = 0;
    sr = semop(s, (struct sembuf *)8, 1);
    printf("semop, bad buffer: %d %s\n", sr, strerrorname_np(errno));
    struct timespec bad = {0, 2000000000};
    errno = 0;
    sr = semtimedop(s, &down, 1, &bad);
    printf("semtimedop, bad timeout: %d %s\n", sr, strerrorname_np(errno));
    semctl(s, 0, IPC_RMID);

    /* POSIX message queue. */
    struct mq_attr at = {.mq_maxmsg = 1, .mq_msgsize = 64};
    char name[64];
    snprintf(name, sizeof name, "/corun-ipc-%d", getpid());
    mqd_t mq = mq_open(name, O_CREAT | O_RDWR, 0600, &at);
    mq_unlink(name);
    char buf[64];
    t0 = ticker_now();
    p = later(mq_put, mq);
    r = mq_receive(mq, buf, sizeof buf, NULL);
    printf("mq_receive: %zd %s\n", r, r > 0 ? buf : strerror(errno));
    ticked("mq_receive", t0);
    reap(p);
    mq_send(mq, "one", 4, 0);
    t0 = ticker_now();
    p = later(mq_take, mq);
    printf("mq_send on a full queue: %d\n", mq_send(mq, "two", 4, 0));
    ticked("mq_send", t0);
    reap(p);
    r = mq_receive(mq, buf, sizeof buf, NULL);
    printf("then mq_receive: %s\n", r > 0 ? buf : strerror(errno));
    struct timespec abs;
    clock_gettime(CLOCK_REALTIME, &abs);
    abs.tv_nsec += 150000000;
    if (abs.tv_nsec >= 1000000000) {
        abs.tv_sec++;
        abs.tv_nsec -= 1000000000;
    }
    t0 = ticker_now();
    errno = 0;
    r = mq_timedreceive(mq, buf, sizeof buf, NULL, &abs);
    printf("mq_timedreceive, 150 ms, empty: %zd %s\n", r, strerrorname_np(errno));
    ticked("mq_timedreceive", t0);
    errno = 0;
    r = mq_receive(mq, buf, 8, NULL);
    printf("mq_receive, buffer too small: %zd %s\n", r, strerrorname_np(errno));
    mq_close(mq);

    ticker_stop();
    return 0;
}
