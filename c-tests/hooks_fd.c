/*
 * hooks_fd TMPDIR - fd life cycle transcript (see transcript.h).
 *
 * close, close_range, closefrom, fclose, dup, dup2, dup3, fcntl, fcntl64,
 * ioctl, pipe, pipe2, open/open64 (a FIFO, with and without O_NONBLOCK),
 * openat, creat, the fortified __open_2/__open64_2/__openat_2, eventfd
 * after an fd was closed behind corun's back (fclose), inotify, signalfd,
 * memfd_create, epoll_create, popen/pclose, sendfile, sendfile64 and
 * splice; and what children see: a forked child and
 * `sh -c 'cat'` reading a pipe the parent writes with waits in between
 * find a blocking fd (corun never leaves O_NONBLOCK on a description).
 */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "transcript.h"

static char big[1 << 20];
static char back[1 << 20];

/* Reads exactly n bytes (after ms) into back[], for byte checks. */
struct collect {
    int fd;
    size_t n;
    volatile size_t got;
};
static void do_collect(void *p)
{
    struct collect *c = p;
    size_t got = 0;
    while (got < c->n) {
        ssize_t r = read(c->fd, back + got, c->n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    c->got = got;
}

static void do_kill_usr2(void *p)
{
    (void)p;
    kill(getpid(), SIGUSR2);
}

static void do_create(void *p) { close(creat((const char *)p, 0600)); }

static int fill_file(const char *dir, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/hooks_fd.data", dir);
    int f = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (f < 0 || write(f, big, n) != (ssize_t)n)
        exit(2);
    unlink(path);
    lseek(f, 0, SEEK_SET);
    return f;
}

int main(int argc, char **argv)
{
    /* SIGUSR2 is read through a signalfd below: blocked first, before any
     * thread starts (under corun: before the ticker starts a worker), so
     * every thread inherits the mask, as a program using signalfd does. */
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    sigprocmask(SIG_BLOCK, &usr2, NULL);
    tr_start();
    signal(SIGPIPE, SIG_IGN);
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    char buf[256];
    int p[2], s[2];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i * 31 + 7);

    /* dup family and fcntl. */
    T("pipe", pipe(p));
    T("dup", dup(p[0]) >= 0);
    T("dup2 onto 50", dup2(p[0], 50));
    T("dup2 onto itself", dup2(p[0], p[0]) == p[0]);
    T("dup2 bad fd", dup2(999, 51));
    T("dup3 O_CLOEXEC onto 51", dup3(p[0], 51, O_CLOEXEC));
    T("dup3 onto itself", dup3(p[0], p[0], 0));
    T("fcntl F_GETFD 51", fcntl(51, F_GETFD));
    T("fcntl F_DUPFD 60", fcntl(p[0], F_DUPFD, 60));
    T("fcntl64 F_DUPFD_CLOEXEC 70", fcntl64(p[0], F_DUPFD_CLOEXEC, 70));
    T("fcntl64 F_GETFL", fcntl64(p[0], F_GETFL) & O_ACCMODE);
    T("fcntl bad fd", fcntl(999, F_GETFL));
    T("close 50", close(50));
    T("close 50 again", close(50));
    T("close -1", close(-1));
    later_write(DELAY, p[1], "via 60", 6);
    WAITS("read dup 60 (data later)", read(60, buf, sizeof buf));
    later_write(DELAY, p[1], "via 70", 6);
    WAITS("read dup 70 (data later)", read(70, buf, sizeof buf));
    int avail = -1;
    T("write 3", write(p[1], "abc", 3));
    T("ioctl FIONREAD", ioctl(p[0], FIONREAD, &avail));
    printf("available %d\n", avail);
    T("read", read(p[0], buf, sizeof buf));
    close(51);
    close(60);
    close(70);

    /* A forked child sees a blocking pipe after the parent waited on it. */
    later_write(DELAY, p[1], "wait", 4);
    WAITS("read (data later)", read(p[0], buf, sizeof buf));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* Raw syscalls only: the child just reports what it sees. */
        long fl0 = syscall(SYS_fcntl, p[0], F_GETFL);
        long fl1 = syscall(SYS_fcntl, p[1], F_GETFL);
        _exit((fl0 & O_NONBLOCK) || (fl1 & O_NONBLOCK) ? 1 : 0);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK("forked child sees blocking ends", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(p[0]);
    close(p[1]);

    /* sh -c 'cat' reads a pipe the parent fills with waits in between. */
    char out[256];
    snprintf(out, sizeof out, "%s/hooks_fd.cat", dir);
    T("pipe", pipe(p));
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        syscall(SYS_dup2, p[0], 0);
        syscall(SYS_close, p[0]);
        syscall(SYS_close, p[1]);
        execl("/bin/sh", "sh", "-c", "cat > \"$0\"", out, (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    WAITS("write 1 MiB to cat through a pipe", write(p[1], big, sizeof big));
    close(p[1]);
    waitpid(pid, &st, 0);
    CHECK("cat exited 0", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    int cf = open(out, O_RDONLY);
    ssize_t got = 0, r;
    while ((r = read(cf, back + got, sizeof back - (size_t)got)) > 0)
        got += r;
    close(cf);
    unlink(out);
    CHECK("cat wrote every byte back", got == (ssize_t)sizeof big && memcmp(big, back, sizeof big) == 0);

    /* sh -c 'sleep; echo' writes later: the parent's read waits. */
    T("pipe", pipe(p));
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        syscall(SYS_dup2, p[1], 1);
        syscall(SYS_close, p[0]);
        syscall(SYS_close, p[1]);
        execl("/bin/sh", "sh", "-c", "sleep 0.1; echo hi", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    WAITS("read from sh (writes later)", read(p[0], buf, sizeof buf));
    T("read from sh (exits)", read(p[0], buf, sizeof buf));
    close(p[0]);
    waitpid(pid, &st, 0);

    /* open: a FIFO, non-blocking and blocking. */
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/hooks_fd.fifo", dir);
    unlink(fifo);
    T("mkfifo", mkfifo(fifo, 0600));
    int f1 = open64(fifo, O_RDWR | O_NONBLOCK);
    T("open64 fifo O_RDWR|O_NONBLOCK", f1 >= 0);
    T("read fifo O_NONBLOCK", read(f1, buf, sizeof buf));
    close(f1);
    int f2 = open(fifo, O_RDWR);
    CHECK("blocking fifo fd got the number back", f2 == f1);
    later_write(DELAY, f2, "fifo", 4);
    WAITS("read blocking fifo, same number (data later)", read(f2, buf, sizeof buf));
    close(f2);
    unlink(fifo);

    /* The other ways to open, and fds of every kind that wait. */
    char path[256];
    snprintf(path, sizeof path, "%s/hooks_fd.file", dir);
    int cr = creat(path, 0600);
    T("creat", cr >= 0);
    T("write", write(cr, "file", 4));
    close(cr);
    volatile int rdonly = O_RDONLY; /* not a constant: the fortified names */
    int o2 = open(path, rdonly);
    T("open (fortified: __open_2)", o2 >= 0);
    int o3 = open64(path, rdonly);
    T("open64 (fortified: __open64_2)", o3 >= 0);
    int o4 = openat(AT_FDCWD, path, rdonly);
    T("openat (fortified: __openat_2)", o4 >= 0);
    int o5 = openat(AT_FDCWD, path, O_RDONLY);
    T("openat", o5 >= 0);
    int o6 = openat64(AT_FDCWD, path, O_RDONLY);
    T("openat64", o6 >= 0);
    T("pread64", pread64(o6, buf, 3, 1));
    int o7 = creat64(path, 0600);
    T("creat64", o7 >= 0);
    close(o2);
    close(o3);
    close(o4);
    close(o5);
    close(o6);
    close(o7);
    unlink(path);
    int in = inotify_init1(0);
    T("inotify_init1", in >= 0);
    T("inotify_add_watch", inotify_add_watch(in, dir, IN_CREATE) >= 0);
    char created[256];
    snprintf(created, sizeof created, "%s/hooks_fd.created", dir);
    later(DELAY, do_create, created);
    char evbuf[4096] __attribute__((aligned(8)));
    WAITS("read inotify (a file is created later)", read(in, evbuf, sizeof evbuf) > 0);
    CHECK("IN_CREATE", ((struct inotify_event *)evbuf)->mask & IN_CREATE);
    unlink(created);
    close(in);
    int in0 = inotify_init();
    T("inotify_init", in0 >= 0);
    close(in0);
    int mf = memfd_create("hooks_fd", 0);
    T("memfd_create", mf >= 0);
    T("write memfd", write(mf, "memfd", 5));
    T("pread memfd", pread(mf, buf, 5, 0));
    close(mf);
    int ep0 = epoll_create(1);
    T("epoll_create", ep0 >= 0);
    close(ep0);
    int sfd = signalfd(-1, &usr2, 0);
    T("signalfd", sfd >= 0);
    later(DELAY, do_kill_usr2, NULL);
    struct signalfd_siginfo si;
    WAITS("read signalfd (signal later)", read(sfd, &si, sizeof si));
    CHECK("SIGUSR2", si.ssi_signo == SIGUSR2);
    close(sfd);
    FILE *pp = popen("echo popen", "r");
    char line[32] = "";
    T("popen", pp != NULL);
    T("fgets from popen", fgets(line, sizeof line, pp) != NULL);
    T("pclose", pclose(pp));

    /* An fd closed behind corun's back (fclose), its number reused by an
     * eventfd: the eventfd must not inherit the socket's registration. */
    T("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, s));
    later_write(DELAY, s[1], "sock", 4);
    WAITS("read socket (data later)", read(s[0], buf, sizeof buf));
    int num = s[0];
    FILE *fp = fdopen(s[0], "r");
    T("fclose(fdopen(socket))", fclose(fp));
    int efd = eventfd(0, 0);
    CHECK("eventfd got the socket's number", efd == num);
    static uint64_t five = 5;
    later_write(DELAY, efd, &five, 8);
    uint64_t v = 0;
    WAITS("read eventfd with the socket's number (written later)", read(efd, &v, 8));
    printf("eventfd value %llu\n", (unsigned long long)v);
    close(efd);
    close(s[1]);

    /* close_range/closefrom: everything from 3 on goes, then it all works. */
    T("pipe", pipe(p));
    later_write(DELAY, p[1], "before", 6);
    WAITS("read (data later)", read(p[0], buf, sizeof buf));
    T("close_range 3..~0", close_range(3, ~0U, 0));
    T("read closed", read(p[0], buf, sizeof buf));
    T("pipe after close_range", pipe(p));
    CHECK("numbers from 3 again", p[0] == 3);
    later_write(DELAY, p[1], "after", 5);
    WAITS("read (data later)", read(p[0], buf, sizeof buf));
    closefrom(3);
    T("read after closefrom", read(p[0], buf, sizeof buf));
    T("pipe2 O_CLOEXEC after closefrom", pipe2(p, O_CLOEXEC));
    later_write(DELAY, p[1], "again", 5);
    WAITS("read (data later)", read(p[0], buf, sizeof buf));
    close(p[0]);
    close(p[1]);

    /* sendfile/sendfile64 to a socket and a pipe, read back later. */
    int f = fill_file(dir, sizeof big);
    T("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, s));
    struct collect c = {s[1], sizeof big, 0};
    later(DELAY, do_collect, &c);
    WAITS("sendfile 1 MiB to a socket, offset NULL (read later)", sendfile(s[0], f, NULL, sizeof big));
    while (c.got != sizeof big)
        usleep(1000);
    CHECK("bytes", memcmp(big, back, sizeof big) == 0);
    T("file position after", lseek(f, 0, SEEK_CUR));
    T("pipe", pipe(p));
    off_t off = 1000;
    memset(back, 0, sizeof back);
    struct collect c2 = {p[0], sizeof big - 1000, 0};
    later(DELAY, do_collect, &c2);
    /* Natively a blocking sendfile into a pipe returns once the pipe is
     * full: the count is what fit (the helper reads it all). */
    long sent = 0;
    while (sent < (long)sizeof big - 1000) {
        long r1 = sendfile64(p[1], f, &off, sizeof big - 1000 - (size_t)sent);
        if (r1 <= 0)
            break;
        sent += r1;
    }
    T("sendfile64 to a pipe in a loop, offset 1000 (read later)", sent);
    while (c2.got != sizeof big - 1000)
        usleep(1000);
    CHECK("bytes", memcmp(big + 1000, back, sizeof big - 1000) == 0);
    close(p[1]);
    T("pipe", pipe(p));
    T("fill it: write 65536", write(p[1], big, 65536));
    struct collect c3 = {p[0], 65536 + 4096, 0};
    later(DELAY, do_collect, &c3);
    off = 0;
    WAITS("sendfile 4096 into a full pipe (read later)", sendfile(p[1], f, &off, 4096));
    while (c3.got != 65536 + 4096)
        usleep(1000);
    printf("offset after %lld\n", (long long)off);
    T("file position unchanged", lseek(f, 0, SEEK_CUR));
    T("sendfile to a bad fd", sendfile(999, f, NULL, 10));
    struct timeval tmo = {0, 100000};
    int sndbuf = 65536;
    setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    setsockopt(s[0], SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof tmo);
    off = 0;
    long part;
    WAITS("sendfile with SO_SNDTIMEO, peer not reading", (part = sendfile(s[0], f, &off, sizeof big)) > 0);
    CHECK("partial count, offset matches", part > 0 && part < (long)sizeof big && off == part);
    close(s[0]);
    close(s[1]);

    /* splice: socket -> pipe (data later), pipe -> socket. */
    T("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, s));
    later_write(DELAY, s[1], "splice me", 9);
    WAITS("splice socket -> pipe (data later)", splice(s[0], NULL, p[1], NULL, 4096, 0));
    T("splice pipe -> socket", splice(p[0], NULL, s[0], NULL, 4096, 0));
    T("read it back", read(s[1], buf, sizeof buf));
    CHECK("bytes", memcmp(buf, "splice me", 9) == 0);
    later_write(DELAY, p[1], "pipe first", 10);
    WAITS("splice pipe -> socket (data later)", splice(p[0], NULL, s[0], NULL, 4096, 0));
    T("splice with SPLICE_F_NONBLOCK, nothing", splice(s[0], NULL, p[1], NULL, 4096, SPLICE_F_NONBLOCK));
    T("splice two sockets", splice(s[0], NULL, s[1], NULL, 10, 0));
    close(s[0]);
    close(s[1]);
    close(p[0]);
    close(p[1]);
    close(f);
    return tr_end();
}
