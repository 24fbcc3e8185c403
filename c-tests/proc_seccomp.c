/* A child that confines itself with a strict seccomp filter (as sshd's
 * sandbox child does), once with prctl(PR_SET_SECCOMP) after
 * PR_SET_NO_NEW_PRIVS and once with syscall(SYS_seccomp), then talks over
 * a socket with read and write only. The filter allows read, write, exit,
 * exit_group and rt_sigreturn; anything else kills the thread that made
 * it (SECCOMP_RET_KILL_THREAD, OpenSSH's choice). The child has a second
 * thread parked in a read, so under corun its calls would otherwise park
 * (and a parking write on a socket is a sendmsg). The parent checks every
 * byte, that the child ends (EOF, bounded), and how it ends. A third child
 * ends its thread first, confines itself, writes a line and then makes a
 * forbidden call (getppid): the filter kills its only thread, and the
 * process must end with it (SIGSYS), as natively: no thread of corun's may
 * keep it, and its socket, alive. The output is the same natively and
 * under corun. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 50

static int idle_r;

static void *idle_reader(void *unused)
{
    (void)unused;
    char c;
    while (read(idle_r, &c, 1) > 0) {
    }
    return NULL;
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static struct sock_filter rules[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    ALLOW(SYS_read),
    ALLOW(SYS_write),
    ALLOW(SYS_exit),
    ALLOW(SYS_exit_group),
    ALLOW(SYS_rt_sigreturn),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_THREAD),
};

static int confine(int how)
{
    struct sock_fprog prog = {.len = sizeof rules / sizeof rules[0], .filter = rules};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    if (how == 0)
        return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* The third child: one thread made and joined, then confined, one line,
 * then a call the filter forbids. */
static void *nothing(void *unused)
{
    return unused;
}

static void doomed_child(int s)
{
    pthread_t t;
    pthread_create(&t, NULL, nothing, NULL);
    pthread_join(t, NULL);
    if (confine(0) != 0)
        _exit(92);
    if (write(s, "confined, now a forbidden call\n", 31) != 31)
        _exit(93);
    syscall(SYS_getppid);
    _exit(97);
}

static void child(int s, int how)
{
    int p[2];
    if (pipe(p) != 0)
        _exit(90);
    idle_r = p[0];
    pthread_t t;
    pthread_create(&t, NULL, idle_reader, NULL);
    /* Before the filter: one exchange the ordinary way. */
    char buf[64];
    if (write(s, "hello before\n", 13) != 13 || read(s, buf, 3) != 3)
        _exit(91);
    if (confine(how) != 0)
        _exit(92);
    for (int i = 0; i < ROUNDS; i++) {
        int n = snprintf(buf, sizeof buf, "confined line %02d\n", i);
        if (write(s, buf, (size_t)n) != n)
            _exit(93);
        char ack[4];
        size_t got = 0;
        while (got < 4) {
            ssize_t r = read(s, ack + got, 4 - got);
            if (r <= 0)
                _exit(94);
            got += (size_t)r;
        }
        if (memcmp(ack, "ack\n", 4) != 0)
            _exit(95);
    }
    if (write(s, "bye\n", 4) != 4)
        _exit(96);
    _exit(7);
}

/* Reads one line (up to '\n') from `s`, waiting at most 10 s in all. */
static int read_line(int s, char *b, int cap)
{
    int n = 0;
    while (n < cap - 1) {
        struct pollfd pf = {.fd = s, .events = POLLIN};
        if (poll(&pf, 1, 10000) != 1)
            return -2;
        ssize_t r = read(s, b + n, 1);
        if (r <= 0)
            return n ? n : -1;
        if (b[n++] == '\n')
            break;
    }
    b[n] = 0;
    return n;
}

/* Forks a child that runs `how` (0, 1: `child`; 2: `doomed_child`) on its
 * end of a socket pair; returns the parent's end. */
static int start_child(int how, pid_t *pid)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        exit(1);
    fflush(stdout);
    *pid = fork();
    if (*pid == 0) {
        close(sv[0]);
        if (how == 2)
            doomed_child(sv[1]);
        child(sv[1], how);
    }
    close(sv[1]);
    return sv[0];
}

/* How the child ended, and the EOF after its last line. */
static void ended(pid_t pid, int eof)
{
    int st = 0;
    waitpid(pid, &st, 0);
    printf("then %s; child %s %d\n", eof == -1 ? "EOF" : eof == -2 ? "nothing for 10 s" : "more data",
           WIFEXITED(st) ? "exited" : "killed by", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

int main(void)
{
    for (int how = 0; how < 2; how++) {
        const char *name = how == 0 ? "prctl(PR_SET_SECCOMP)" : "syscall(SYS_seccomp)";
        pid_t pid;
        int s = start_child(how, &pid), good = 0, bad = 0, end;
        char line[64], want[64];
        if (read_line(s, line, sizeof line) > 0 && strcmp(line, "hello before\n") == 0)
            good++;
        else
            bad++;
        if (write(s, "go\n", 3) != 3)
            return 1;
        for (int i = 0; i < ROUNDS; i++) {
            snprintf(want, sizeof want, "confined line %02d\n", i);
            int n = read_line(s, line, sizeof line);
            if (n > 0 && strcmp(line, want) == 0)
                good++;
            else
                bad++;
            if (n <= 0 || write(s, "ack\n", 4) != 4)
                break;
        }
        end = read_line(s, line, sizeof line);
        int bye = end > 0 && strcmp(line, "bye\n") == 0;
        int eof = read_line(s, line, sizeof line);
        close(s);
        printf("%s: %d lines right, %d wrong, bye %s, ", name, good, bad, bye ? "received" : "missing");
        ended(pid, eof);
    }
    pid_t pid;
    int s = start_child(2, &pid);
    char line[64];
    int n = read_line(s, line, sizeof line);
    int eof = read_line(s, line + 32, 32);
    if (eof == -2)
        kill(pid, SIGKILL); /* the test fails; do not wait for ever */
    printf("forbidden call: %s", n > 0 ? line : "no line\n");
    ended(pid, eof);
    return 0;
}
