/* sigaction reports the program's own SIGSEGV/SIGBUS actions (SIG_DFL at
 * start, whatever it set later, through sigaction and signal), and each
 * thread has its own alternate signal stack: none at first, the one it
 * set, SS_ONSTACK inside a SA_ONSTACK handler, EPERM when changing it
 * there, ENOMEM/EINVAL for bad ones, none again after SS_DISABLE. Threads
 * run one after the other and four at once, each freeing its stack at the
 * end. Then a forked child's new thread overflows its stack: it must be
 * killed by a signal (under corun, after corun's overflow message, which
 * the test script looks for: the freed stacks must not have broken it).
 * The output is the same natively and under corun. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ALT (64 * 1024)

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    _exit(99);
}

static const char *name(void (*h)(int))
{
    if (h == SIG_DFL)
        return "SIG_DFL";
    if (h == SIG_IGN)
        return "SIG_IGN";
    if ((void *)h == (void *)on_segv)
        return "on_segv";
    return "something else";
}

static void actions(void)
{
    struct sigaction old, sa;
    for (int sig = SIGBUS; sig <= SIGSEGV; sig += SIGSEGV - SIGBUS) {
        sigaction(sig, NULL, &old);
        printf("sig %d at start: %s\n", sig, name(old.sa_handler));
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, &old);
    printf("set on_segv, old: %s\n", name(old.sa_handler));
    sigaction(SIGSEGV, NULL, &old);
    printf("now: %s, SA_SIGINFO %d, SA_ONSTACK %d\n", name(old.sa_handler), !!(old.sa_flags & SA_SIGINFO),
           !!(old.sa_flags & SA_ONSTACK));
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGSEGV, &sa, &old);
    printf("set SIG_IGN, old: %s\n", name(old.sa_handler));
    printf("signal(SIG_DFL) returns %s\n", name(signal(SIGSEGV, SIG_DFL)));
    printf("signal(SIG_IGN) returns %s\n", name(signal(SIGBUS, SIG_IGN)));
    sa.sa_handler = SIG_DFL;
    sigaction(SIGBUS, &sa, &old);
    printf("SIGBUS back to SIG_DFL, old: %s\n", name(old.sa_handler));
    sigaction(SIGSEGV, NULL, &old);
    printf("SIGSEGV now: %s\n", name(old.sa_handler));
}

static __thread char *my_stack;
static __thread int in_handler_onstack, in_handler_eperm;

static void on_usr1(int sig)
{
    (void)sig;
    stack_t cur, other;
    sigaltstack(NULL, &cur);
    char here;
    in_handler_onstack = (cur.ss_flags & SS_ONSTACK) != 0 && cur.ss_sp == my_stack;
    memset(&other, 0, sizeof other);
    other.ss_sp = malloc(ALT);
    other.ss_size = ALT;
    in_handler_eperm = sigaltstack(&other, NULL) == -1 && errno == EPERM;
    free(other.ss_sp);
    (void)here;
}

static void describe(char *out, size_t cap, const stack_t *s)
{
    snprintf(out, cap, "%s%s size %s", s->ss_flags & SS_DISABLE ? "disabled" : "enabled",
             s->ss_flags & SS_ONSTACK ? " onstack" : "",
             s->ss_size == 0 ? "0" : s->ss_size == ALT ? "ALT" : "other");
}

static void *thread_altstack(void *arg)
{
    char *line = arg, a[40], b[40], c[40];
    stack_t cur, ss;
    sigaltstack(NULL, &cur);
    describe(a, sizeof a, &cur);
    int sp_null = cur.ss_sp == NULL;
    my_stack = malloc(ALT);
    memset(&ss, 0, sizeof ss);
    ss.ss_size = 100;
    ss.ss_sp = my_stack;
    int enomem = sigaltstack(&ss, NULL) == -1 && errno == ENOMEM;
    ss.ss_size = ALT;
    ss.ss_flags = 12345;
    int einval = sigaltstack(&ss, NULL) == -1 && errno == EINVAL;
    ss.ss_flags = 0;
    int set = sigaltstack(&ss, NULL) == 0;
    sigaltstack(NULL, &cur);
    describe(b, sizeof b, &cur);
    int mine = cur.ss_sp == my_stack;
    raise(SIGUSR1);
    ss.ss_flags = SS_DISABLE;
    int off = sigaltstack(&ss, NULL) == 0;
    free(my_stack);
    sigaltstack(NULL, &cur);
    describe(c, sizeof c, &cur);
    snprintf(line, 512,
             "first %s (sp %s); ENOMEM %d EINVAL %d set %d -> %s, mine %d; handler onstack %d, EPERM %d; "
             "disable %d -> %s",
             a, sp_null ? "NULL" : "set", enomem, einval, set, b, mine, in_handler_onstack, in_handler_eperm,
             off, c);
    return NULL;
}

static int deep(int n)
{
    volatile char pad[4096];
    pad[0] = (char)n;
    return n == 0 ? pad[0] : deep(n - 1) + pad[0];
}

static void *overflow(void *arg)
{
    (void)arg;
    printf("%d\n", deep(1 << 30));
    return NULL;
}

int main(void)
{
    actions();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    static char lines[8][512];
    pthread_t t[8];
    for (int i = 0; i < 4; i++) {
        pthread_create(&t[i], NULL, thread_altstack, lines[i]);
        pthread_join(t[i], NULL);
    }
    for (int i = 4; i < 8; i++)
        pthread_create(&t[i], NULL, thread_altstack, lines[i]);
    for (int i = 4; i < 8; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 8; i++)
        printf("thread %d: %s\n", i, lines[i]);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        pthread_t o;
        pthread_create(&o, NULL, overflow, NULL);
        pthread_join(o, NULL);
        _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    printf("overflowing child: %s\n",
           WIFSIGNALED(st) && (WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGABRT) ? "killed by SIGSEGV/SIGABRT"
                                                                                   : "not killed by a fault");
    return 0;
}
