// sigsetjmp(env, 1) saves the thread's signal mask and siglongjmp (and
// longjmp on such an env) restores it, outside any handler: in main and in
// a thread, a jump back after blocking SIGUSR1 unblocks it, one after
// unblocking it blocks it again, and a SIGUSR1 sent while blocked is
// delivered by the jump that unblocks it, before the jump lands. With
// sigsetjmp(env, 0) the mask stays as it was at the jump. The BSD setjmp
// symbol (`(setjmp)(env)`, not the <setjmp.h> macro, which is _setjmp)
// saves the mask too, in an env an earlier sigsetjmp(env, 1) filled.
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

static __thread volatile sig_atomic_t got;
static void on_usr1(int s) {
    (void)s;
    got++;
}

static int blocked(void) {
    sigset_t o;
    sigprocmask(SIG_BLOCK, NULL, &o);
    return sigismember(&o, SIGUSR1);
}

static void one(int how) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    sigprocmask(how, &s, NULL);
}

static void run(const char *w) {
    sigjmp_buf env;
    if (sigsetjmp(env, 1) == 0) {
        one(SIG_BLOCK);
        pthread_kill(pthread_self(), SIGUSR1);
        printf("%s: blocked %d, handler ran %d\n", w, blocked(), (int)got);
        siglongjmp(env, 1);
    }
    printf("%s: after siglongjmp blocked %d, handler ran %d\n", w, blocked(), (int)got);
    one(SIG_BLOCK);
    if (sigsetjmp(env, 1) == 0) {
        one(SIG_UNBLOCK);
        printf("%s: unblocked %d\n", w, blocked());
        longjmp(env, 1);
    }
    printf("%s: after longjmp blocked %d\n", w, blocked());
    one(SIG_UNBLOCK);
    if (sigsetjmp(env, 0) == 0) {
        one(SIG_BLOCK);
        siglongjmp(env, 1);
    }
    printf("%s: after siglongjmp, no mask saved: blocked %d\n", w, blocked());
    one(SIG_UNBLOCK);
    jmp_buf bsd;
    if (sigsetjmp(bsd, 1) == 0) {
        one(SIG_BLOCK); /* the mask this first save keeps: unblocked */
        if ((setjmp)(bsd) == 0) {
            one(SIG_UNBLOCK);
            longjmp(bsd, 1);
        }
        printf("%s: after the BSD setjmp's longjmp blocked %d\n", w, blocked());
    }
    one(SIG_UNBLOCK);
}

static void *thr(void *a) {
    (void)a;
    run("thread");
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGUSR1, on_usr1);
    run("main");
    pthread_t t;
    pthread_create(&t, NULL, thr, NULL);
    pthread_join(t, NULL);
    return 0;
}
