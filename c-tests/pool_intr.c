/* Blocking calls that a signal handler interrupts natively, each waiting
 * in a thread while another signals it (signal(7), "Interruption of system
 * calls and library functions by signal handlers"):
 *
 *   fcntl(F_SETLKW), fcntl(F_OFD_SETLKW), flock(LOCK_EX), lockf(F_LOCK)
 *     on a lock a child process holds: EINTR, restarted under SA_RESTART;
 *   open(O_RDONLY) of a FIFO with no writer: the same;
 *   write of 256 KiB to a pty slave nobody reads: the part written, with
 *     or without SA_RESTART;
 *   semop (waiting, and mixing IPC_NOWAIT with waiting operations),
 *     msgrcv on an empty queue, io_getevents(min_nr 1) with nothing
 *     submitted: EINTR even under SA_RESTART.
 *
 * Each call is signalled in five ways: pthread_kill of a handler without
 * SA_RESTART; a process-directed SIGALRM (setitimer, main blocks it) the
 * waiting thread takes; pthread_kill of a handler with SA_RESTART; the
 * signal blocked in the waiting thread's mask; the signal at SIG_IGN. The
 * last two must not interrupt anything: the call goes on until the
 * resource is released (then it succeeds, and the blocked handler runs
 * once unblocked). A restarted call must have run its handler at once and
 * still wait. Then the classic alarm(1) around fcntl(F_SETLKW), and a
 * lock wait interrupted again after the program set, used and reset a
 * handler of its own for SIGRTMAX.
 *
 * The program asserts the native behaviour itself; it prints one line per
 * case and exits 1 if any differs. A call still waiting 2 s after a
 * signal that should have ended it is reported, then released (so that
 * every case is seen), and a thread that does not return at all exits 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

enum call { FCNTL, OFD, FLOCK, LOCKF, FIFO, TTY, WAITPID, SEMOP, SEMOP_MIXED, MSGRCV, AIO, NCALLS };
static const char *call_name[NCALLS] = {
    "fcntl(F_SETLKW)", "fcntl(F_OFD_SETLKW)", "flock(LOCK_EX)", "lockf(F_LOCK)",
    "open(FIFO, O_RDONLY)", "write(pty, 256 KiB)", "waitpid", "semop", "semop(IPC_NOWAIT mixed)",
    "msgrcv", "io_getevents",
};
/* signal(7): restarted under SA_RESTART (else never). */
static const int restartable[NCALLS] = {1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};

enum mode { KILL, ALARM, RESTART, BLOCKED, IGNORED, CLASSIC, NMODES };
static const char *mode_name[NMODES] = {
    "pthread_kill, no SA_RESTART", "SIGALRM to the process, no SA_RESTART",
    "pthread_kill, SA_RESTART", "signal blocked in the thread", "signal at SIG_IGN",
    "alarm(1)",
};

#define TTY_SIZE (256 * 1024)
static char tty_buf[TTY_SIZE];

static char dir[64], path_a[96], path_b[96], path_fifo[96];
static int fd_a, fd_a_ofd, fd_b, sem_id, msq_id, pty_master, pty_slave;
static aio_context_t aio_ctx;
static int to_child, from_child;
static int fifo_writer = -1;
static pid_t sleeper = -1;
static int sleeper_pipe = -1;

static atomic_int handled;
static atomic_int started, done;
static long result;
static int result_errno;
static int handled_at_return;
static enum call cur_call;
static enum mode cur_mode;
static int failures;

static void on_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

static void die(const char *what)
{
    perror(what);
    exit(3);
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* Waits up to `ms` for `done`; whether it came. */
static int wait_done(int ms)
{
    for (int i = 0; i < ms; i += 5) {
        if (atomic_load(&done))
            return 1;
        sleep_ms(5);
    }
    return atomic_load(&done);
}

static void child_cmd(char c)
{
    if (write(to_child, &c, 1) != 1 || read(from_child, &c, 1) != 1)
        die("holder");
}

/* The holder process: takes (L) and drops (U) a POSIX lock on file A and a
 * flock on file B, through its own open file descriptions. */
static void holder(int in, int out)
{
    int a = open(path_a, O_RDWR), b = open(path_b, O_RDWR);
    char c;
    if (a < 0 || b < 0)
        _exit(3);
    while (read(in, &c, 1) == 1) {
        struct flock fl = {.l_type = c == 'L' ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET};
        if (c == 'Q')
            _exit(0);
        if (fcntl(a, F_SETLK, &fl) != 0 || flock(b, c == 'L' ? LOCK_EX : LOCK_UN) != 0)
            _exit(3);
        if (write(out, &c, 1) != 1)
            _exit(3);
    }
    _exit(0);
}

static void drain_pty(void)
{
    static char sink[65536];
    while (read(pty_master, sink, sizeof sink) > 0) {
    }
}

/* Makes the call's resource busy. */
static void hold(enum call c)
{
    switch (c) {
    case FCNTL: case OFD: case FLOCK: case LOCKF:
        child_cmd('L');
        break;
    case SEMOP: case SEMOP_MIXED:
        if (semctl(sem_id, 0, SETVAL, 0) != 0 || semctl(sem_id, 1, SETVAL, 0) != 0)
            die("semctl");
        break;
    case TTY:
        drain_pty();
        break;
    case WAITPID: {
        int p[2];
        if (pipe(p) != 0)
            die("pipe");
        sleeper = fork();
        if (sleeper < 0)
            die("fork");
        if (sleeper == 0) {
            char c;
            close(p[1]);
            _exit(read(p[0], &c, 1) == 1 ? 0 : 1);
        }
        close(p[0]);
        sleeper_pipe = p[1];
        break;
    }
    default:
        break;
    }
}

/* Frees it, so that a call still waiting completes. */
static void release(enum call c)
{
    switch (c) {
    case FCNTL: case OFD: case FLOCK: case LOCKF:
        child_cmd('U');
        break;
    case SEMOP: case SEMOP_MIXED: {
        struct sembuf up = {1, 1, 0};
        if (semop(sem_id, &up, 1) != 0)
            die("semop up");
        break;
    }
    case MSGRCV: {
        struct { long type; char text[8]; } m = {1, "message"};
        if (msgsnd(msq_id, &m, sizeof m.text, 0) != 0)
            die("msgsnd");
        break;
    }
    case FIFO:
        fifo_writer = open(path_fifo, O_WRONLY | O_NONBLOCK);
        if (fifo_writer < 0)
            die("open fifo writer");
        break;
    case AIO: {
        static char byte;
        struct iocb cb = {.aio_lio_opcode = IOCB_CMD_PREAD, .aio_fildes = (unsigned)fd_a,
                          .aio_buf = (unsigned long)&byte, .aio_nbytes = 1};
        struct iocb *cbs[1] = {&cb};
        if (syscall(SYS_io_submit, aio_ctx, 1, cbs) != 1)
            die("io_submit");
        break;
    }
    case TTY:
        while (!atomic_load(&done)) {
            drain_pty();
            sleep_ms(2);
        }
        break;
    case WAITPID:
        if (write(sleeper_pipe, "x", 1) != 1)
            die("write");
        close(sleeper_pipe);
        sleeper_pipe = -1;
        break;
    default:
        break;
    }
}

/* Gives back what a successful call took. */
static void undo(enum call c, long r)
{
    struct flock un = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
    switch (c) {
    case FCNTL: case LOCKF:
        fcntl(fd_a, F_SETLK, &un);
        break;
    case OFD:
        fcntl(fd_a_ofd, F_OFD_SETLK, &un);
        break;
    case FLOCK:
        flock(fd_b, LOCK_UN);
        break;
    case FIFO:
        close((int)r);
        break;
    case WAITPID:
        if (sleeper_pipe >= 0)
            release(WAITPID);
        if (r != sleeper)
            waitpid(sleeper, NULL, 0);
        break;
    default:
        break;
    }
    if (fifo_writer >= 0) {
        close(fifo_writer);
        fifo_writer = -1;
    }
}

static long make_call(enum call c)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    switch (c) {
    case FCNTL:
        return fcntl(fd_a, F_SETLKW, &fl);
    case OFD:
        return fcntl(fd_a_ofd, F_OFD_SETLKW, &fl);
    case FLOCK:
        return flock(fd_b, LOCK_EX);
    case LOCKF:
        return lockf(fd_a, F_LOCK, 0);
    case FIFO:
        return open(path_fifo, O_RDONLY);
    case TTY:
        return write(pty_slave, tty_buf, TTY_SIZE);
    case WAITPID:
        return waitpid(sleeper, NULL, 0);
    case SEMOP: {
        struct sembuf down = {1, -1, 0};
        return semop(sem_id, &down, 1);
    }
    case SEMOP_MIXED: {
        struct sembuf ops[2] = {{0, 1, IPC_NOWAIT}, {1, -1, 0}};
        return semop(sem_id, ops, 2);
    }
    case MSGRCV: {
        struct { long type; char text[8]; } m;
        return msgrcv(msq_id, &m, sizeof m.text, 0, 0);
    }
    case AIO: {
        struct io_event ev;
        return syscall(SYS_io_getevents, aio_ctx, 1, 1, &ev, NULL);
    }
    default:
        return -1;
    }
}

static void *waiter(void *arg)
{
    (void)arg;
    sigset_t s, alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &alrm, NULL); /* main blocks it */
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    if (cur_mode == BLOCKED)
        pthread_sigmask(SIG_BLOCK, &s, NULL);
    atomic_store(&started, 1);
    result = make_call(cur_call);
    result_errno = errno;
    handled_at_return = atomic_load(&handled);
    atomic_store(&done, 1);
    if (cur_mode == BLOCKED)
        pthread_sigmask(SIG_UNBLOCK, &s, NULL); /* the pending handler runs */
    return NULL;
}

static void set_action(int sig, void (*h)(int), int flags)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = h;
    a.sa_flags = flags;
    sigemptyset(&a.sa_mask);
    if (sigaction(sig, &a, NULL) != 0)
        die("sigaction");
}

static void mismatch(const char *what)
{
    printf("%s, %s: MISMATCH: %s (result %ld, %s, %d handler(s) run)\n", call_name[cur_call],
           mode_name[cur_mode], what, result, result < 0 ? strerror(result_errno) : "ok",
           atomic_load(&handled));
    failures++;
}

static int success(enum call c, long r)
{
    return c == TTY ? r == TTY_SIZE : c == WAITPID ? r == sleeper : c == AIO ? r == 1 : r >= 0;
}

static void run_case(enum call c, enum mode m)
{
    pthread_t t;
    cur_call = c;
    cur_mode = m;
    atomic_store(&handled, 0);
    atomic_store(&started, 0);
    atomic_store(&done, 0);
    result = 0;
    result_errno = 0;
    int sig = (m == ALARM || m == CLASSIC) ? SIGALRM : SIGUSR1;
    if (m == IGNORED)
        set_action(sig, SIG_IGN, 0);
    else
        set_action(sig, on_signal, m == RESTART ? SA_RESTART : 0);
    hold(c);
    if (pthread_create(&t, NULL, waiter, NULL) != 0)
        die("pthread_create");
    while (!atomic_load(&started))
        sleep_ms(1);
    sleep_ms(50); /* in the call by now */
    if (m == ALARM) {
        struct itimerval it = {{0, 0}, {0, 1000}};
        setitimer(ITIMER_REAL, &it, NULL);
    } else if (m == CLASSIC) {
        alarm(1);
    } else {
        pthread_kill(t, sig);
    }
    /* An interrupting signal ends the call; a restarted one runs its
     * handler at once and waits on; the others wait on, no handler run. */
    int ends = (m == KILL || m == ALARM || m == CLASSIC || (m == RESTART && !restartable[c])
                || (m == RESTART && c == TTY));
    const char *outcome = "";
    if (ends) {
        if (!wait_done(m == CLASSIC ? 3000 : 2000)) {
            mismatch("still waiting 2 s after the signal");
            release(c);
            if (!wait_done(3000)) {
                printf("%s, %s: the call never returned\n", call_name[c], mode_name[m]);
                fflush(stdout);
                _exit(2);
            }
            if (success(c, result))
                undo(c, result);
            goto out;
        }
        if (c == TTY) {
            if (!(result > 0 && result < TTY_SIZE))
                mismatch("not a partial write");
            outcome = "returned the part written";
            release(c);
        } else {
            if (!(result == -1 && result_errno == EINTR))
                mismatch("not EINTR");
            outcome = "EINTR";
            if (c == FCNTL || c == OFD || c == FLOCK || c == LOCKF || c == WAITPID)
                release(c);
            if (c == WAITPID)
                undo(c, result);
        }
        if (handled_at_return != 1)
            mismatch("no handler run before the call returned");
    } else {
        if (m == RESTART) {
            for (int i = 0; i < 2000 && atomic_load(&handled) == 0; i += 5)
                sleep_ms(5);
            if (atomic_load(&handled) != 1)
                mismatch("the handler did not run while the call waited");
        }
        if (wait_done(150)) {
            mismatch("returned before the resource was released");
        } else {
            if (m != RESTART && atomic_load(&handled) != 0)
                mismatch("a handler ran");
            release(c);
            if (!wait_done(3000)) {
                printf("%s, %s: the call never returned\n", call_name[c], mode_name[m]);
                fflush(stdout);
                _exit(2);
            }
            if (!success(c, result))
                mismatch("did not succeed once released");
            outcome = m == RESTART ? "restarted, then succeeded" : "not interrupted, then succeeded";
        }
        undo(c, result);
    }
out:
    pthread_join(t, NULL);
    if (m == BLOCKED && atomic_load(&handled) != 1)
        mismatch("the blocked signal's handler did not run once unblocked");
    if (*outcome)
        printf("%s, %s: %s\n", call_name[c], mode_name[m], outcome);
    fflush(stdout);
    set_action(sig, SIG_DFL, 0);
}

/* Whether what the call took matches what it returned: a lock held, a
 * semaphore operation done, a message gone exactly when it succeeded. */
static int state_matches(enum call c, long r)
{
    switch (c) {
    case FCNTL: {
        /* An OFD lock conflicts with this process's own record lock. */
        struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd_a_ofd, F_OFD_GETLK, &q) != 0)
            die("F_OFD_GETLK");
        return (q.l_type != F_UNLCK) == (r == 0);
    }
    case SEMOP_MIXED:
        return r == 0 ? semctl(sem_id, 0, GETVAL) == 1 && semctl(sem_id, 1, GETVAL) == 0
                      : semctl(sem_id, 0, GETVAL) == 0 && semctl(sem_id, 1, GETVAL) == 1;
    case MSGRCV: {
        struct msqid_ds ds;
        if (msgctl(msq_id, IPC_STAT, &ds) != 0)
            die("msgctl");
        return ds.msg_qnum == (r < 0 ? 1u : 0u);
    }
    default:
        return 1;
    }
}

/* The signal and the release at nearly the same moment, in both orders:
 * whatever the call returns, nothing it took may be lost. */
static void race(enum call c, int rounds)
{
    int odd = 0, ok = 0;
    cur_call = c;
    cur_mode = KILL;
    set_action(SIGUSR1, on_signal, 0);
    for (int i = 0; i < rounds; i++) {
        pthread_t t;
        atomic_store(&started, 0);
        atomic_store(&done, 0);
        hold(c);
        if (pthread_create(&t, NULL, waiter, NULL) != 0)
            die("pthread_create");
        while (!atomic_load(&started))
            sleep_ms(1);
        sleep_ms(10);
        if (i % 2) {
            release(c);
            pthread_kill(t, SIGUSR1);
        } else {
            pthread_kill(t, SIGUSR1);
            release(c);
        }
        if (!wait_done(3000)) {
            printf("race %s: the call never returned\n", call_name[c]);
            fflush(stdout);
            _exit(2);
        }
        pthread_join(t, NULL);
        if (!(result == 0 || result > 0 || (result == -1 && result_errno == EINTR))
            || !state_matches(c, result))
            odd++;
        ok += result >= 0;
        undo(c, result);
        if (c == MSGRCV && result < 0) {
            struct { long type; char text[8]; } m;
            msgrcv(msq_id, &m, sizeof m.text, 0, IPC_NOWAIT);
        }
    }
    set_action(SIGUSR1, SIG_DFL, 0);
    fprintf(stderr, "race %s: %d succeeded, %d EINTR\n", call_name[c], ok, rounds - ok);
    printf("race %s: %d rounds, %s\n", call_name[c], rounds,
           odd ? "MISMATCH: a result that does not match what was taken" : "every result matches what was taken");
    if (odd)
        failures++;
}

static void setup(void)
{
    int p1[2], p2[2];
    snprintf(dir, sizeof dir, "/tmp/pool_intr.XXXXXX");
    if (!mkdtemp(dir))
        die("mkdtemp");
    snprintf(path_a, sizeof path_a, "%s/a", dir);
    snprintf(path_b, sizeof path_b, "%s/b", dir);
    snprintf(path_fifo, sizeof path_fifo, "%s/fifo", dir);
    fd_a = open(path_a, O_RDWR | O_CREAT, 0600);
    fd_b = open(path_b, O_RDWR | O_CREAT, 0600);
    if (fd_a < 0 || fd_b < 0 || write(fd_a, "x", 1) != 1 || mkfifo(path_fifo, 0600) != 0)
        die("files");
    fd_a_ofd = open(path_a, O_RDWR);
    if (fd_a_ofd < 0 || pipe(p1) != 0 || pipe(p2) != 0)
        die("open");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(p1[1]);
        close(p2[0]);
        holder(p1[0], p2[1]);
    }
    close(p1[0]);
    close(p2[1]);
    to_child = p1[1];
    from_child = p2[0];
    sem_id = semget(IPC_PRIVATE, 2, 0600);
    msq_id = msgget(IPC_PRIVATE, 0600);
    if (sem_id < 0 || msq_id < 0)
        die("ipc");
    if (syscall(SYS_io_setup, 4, &aio_ctx) != 0)
        die("io_setup");
    pty_master = posix_openpt(O_RDWR | O_NOCTTY);
    if (pty_master < 0 || grantpt(pty_master) != 0 || unlockpt(pty_master) != 0)
        die("pty");
    pty_slave = open(ptsname(pty_master), O_RDWR | O_NOCTTY);
    struct termios tio;
    if (pty_slave < 0 || tcgetattr(pty_slave, &tio) != 0)
        die("pty slave");
    cfmakeraw(&tio);
    tcsetattr(pty_slave, TCSANOW, &tio);
    fcntl(pty_master, F_SETFL, O_NONBLOCK);
    memset(tty_buf, 'x', sizeof tty_buf);
}

static void teardown(void)
{
    char c = 'Q';
    if (write(to_child, &c, 1) != 1)
        perror("holder");
    wait(NULL);
    semctl(sem_id, 0, IPC_RMID);
    msgctl(msq_id, IPC_RMID, NULL);
    syscall(SYS_io_destroy, aio_ctx);
    unlink(path_a);
    unlink(path_b);
    unlink(path_fifo);
    rmdir(dir);
}

int main(void)
{
    setup();
    /* The process-directed SIGALRM must go to the waiting thread. */
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    for (int c = 0; c < NCALLS; c++)
        for (int m = 0; m < CLASSIC; m++)
            run_case(c, m);
    run_case(FCNTL, CLASSIC);
    /* SIGRTMAX (which corun sends its helper threads) taken by the program
     * for a while, then given back: its handler gets its own signal, and
     * a lock wait is interrupted again afterwards. */
    set_action(SIGRTMAX, on_signal, 0);
    atomic_store(&handled, 0);
    raise(SIGRTMAX);
    struct sigaction old;
    set_action(SIGRTMAX, SIG_DFL, 0);
    sigaction(SIGRTMAX, NULL, &old);
    printf("SIGRTMAX handler: %d run, then %s\n", atomic_load(&handled),
           old.sa_handler == SIG_DFL ? "SIG_DFL" : "not SIG_DFL");
    if (atomic_load(&handled) != 1 || old.sa_handler != SIG_DFL)
        failures++;
    run_case(FCNTL, KILL);
    race(FCNTL, 20);
    race(SEMOP_MIXED, 20);
    race(MSGRCV, 20);
    teardown();
    printf("%s\n", failures ? "some calls differ from the native rules" : "all as signal(7) says");
    return failures ? 1 : 0;
}
