// Signal masks across the ucontext calls, which change the mask with a
// system call of their own (glibc's getcontext, setcontext, swapcontext
// and the uc_link return of a makecontext function make rt_sigprocmask
// inline), and a raw syscall(SYS_rt_sigprocmask). Each part prints what
// the program sees; the output is the same natively and under corun.
//
// 1. In main and in a thread: a context made while SIGUSR1 was blocked
//    starts with it blocked; its own block of SIGUSR2 stays with it across
//    swapcontext; the uc_link return restores the saved mask; setcontext
//    with a filled uc_sigmask blocks everything.
// 2. syscall(SYS_rt_sigprocmask) changes the mask sigprocmask reads.
// 3. pthread_kill(SIGUSR1) to a thread that blocked it by setcontext stays
//    pending until the thread unblocks it.
// 4. A thread that setcontext()s into a context blocking every signal
//    and then waits blocks them for itself only: main, on the same worker,
//    gets its SIGALRM (the worker's kernel mask kept them all out, and the
//    process hung, even to SIGTERM).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define STK (1 << 16)

static __thread ucontext_t mainc, coc;
static __thread int tag;
static char stacks[2][STK];

static int blocked(int s) {
    sigset_t o;
    sigprocmask(SIG_BLOCK, NULL, &o);
    return sigismember(&o, s);
}

static void show(const char *w) {
    printf("[%d] %-28s USR1=%d USR2=%d ALRM=%d TERM=%d\n", tag, w, blocked(SIGUSR1),
           blocked(SIGUSR2), blocked(SIGALRM), blocked(SIGTERM));
    fflush(stdout);
}

static void one(int s, int how) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, s);
    sigprocmask(how, &set, NULL);
}

static void co(void) {
    show("co start");
    one(SIGUSR2, SIG_BLOCK);
    show("co blocked USR2");
    swapcontext(&coc, &mainc);
    show("co resumed");
}

static void part1(void) {
    one(SIGUSR1, SIG_BLOCK);
    getcontext(&coc);
    one(SIGUSR1, SIG_UNBLOCK);
    coc.uc_stack.ss_sp = stacks[tag];
    coc.uc_stack.ss_size = STK;
    coc.uc_link = &mainc;
    makecontext(&coc, co, 0);
    show("before swap");
    swapcontext(&mainc, &coc);
    show("main after first swap");
    one(SIGALRM, SIG_BLOCK);
    swapcontext(&mainc, &coc);
    show("main after uc_link");
    volatile int once = 0;
    ucontext_t u;
    getcontext(&u);
    if (!once) {
        once = 1;
        sigfillset(&u.uc_sigmask);
        setcontext(&u);
    }
    show("after setcontext(filled)");
    sigset_t e;
    sigemptyset(&e);
    sigprocmask(SIG_SETMASK, &e, NULL);
    show("after SETMASK empty");
}

static void part2(void) {
    sigset_t s, o;
    sigemptyset(&s);
    sigaddset(&s, SIGTERM);
    long r = syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s, &o, 8);
    printf("[%d] raw block: %ld, old TERM=%d\n", tag, r, sigismember(&o, SIGTERM));
    show("after raw block");
    r = syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &s, NULL, 8);
    printf("[%d] raw unblock: %ld\n", tag, r);
    show("after raw unblock");
}

static void *thr1(void *a) {
    (void)a;
    tag = 1;
    part1();
    part2();
    return NULL;
}

static volatile sig_atomic_t usr1, alrm;
static void on_usr1(int s) { (void)s; usr1++; }
static void on_alrm(int s) { (void)s; alrm++; }
static int go[2], done[2];

static void enter_masked(int sig) {
    volatile int once = 0;
    ucontext_t u;
    getcontext(&u);
    if (!once) {
        once = 1;
        if (sig)
            sigaddset(&u.uc_sigmask, sig);
        else
            sigfillset(&u.uc_sigmask);
        setcontext(&u);
    }
}

static void *thr3(void *a) {
    (void)a;
    tag = 3;
    enter_masked(SIGUSR1);
    char c;
    if (write(done[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)  // main sends USR1 now
        return NULL;
    sigset_t p;
    sigpending(&p);
    printf("[3] pending USR1=%d, handler ran %d\n", sigismember(&p, SIGUSR1), (int)usr1);
    one(SIGUSR1, SIG_UNBLOCK);
    printf("[3] unblocked: handler ran %d\n", (int)usr1);
    fflush(stdout);
    return NULL;
}

static void *thr4(void *a) {
    (void)a;
    tag = 4;
    enter_masked(0);
    char c;
    if (write(done[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
        return NULL;
    show("after main's SIGALRM");
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    part1();
    part2();
    pthread_t t;
    pthread_create(&t, NULL, thr1, NULL);
    pthread_join(t, NULL);

    signal(SIGUSR1, on_usr1);
    signal(SIGALRM, on_alrm);
    if (pipe(go) || pipe(done))
        return 1;
    char c;
    pthread_create(&t, NULL, thr3, NULL);
    if (read(done[0], &c, 1) != 1)
        return 1;
    pthread_kill(t, SIGUSR1);
    if (write(go[1], "g", 1) != 1)
        return 1;
    pthread_join(t, NULL);

    pthread_create(&t, NULL, thr4, NULL);
    if (read(done[0], &c, 1) != 1)
        return 1;
    alarm(1);
    while (!alrm)
        pause();
    printf("[0] main got SIGALRM\n");
    if (write(go[1], "g", 1) != 1)
        return 1;
    pthread_join(t, NULL);
    return 0;
}
