/*
 * cancel_read - deferred cancellation and pthread_exit in C, whose
 * pthread_cleanup_push keeps its handlers in setjmp-based buffers on the
 * stack (no exceptions). A plain pthread program, no corun header.
 *
 *  pop      pthread_cleanup_pop(1) runs the handler, pop(0) does not
 *  read     cancel of a thread parked in read() on a pipe nobody writes,
 *           with handlers pushed in three nested frames (two in one
 *           frame): they run innermost first, join gives PTHREAD_CANCELED
 *  sleep    cancel of a thread in nanosleep(1000 s)
 *  condwait cancel of a thread in pthread_cond_wait: its handler finds the
 *           (error-checking) mutex re-acquired, unlocks it; main can lock it
 *  disable  a cancel sent while disabled waits through read() (which gets
 *           the byte main writes) and usleep until the thread enables
 *           cancellation again; pthread_testcancel then acts
 *  exit     pthread_exit from nested frames runs their handlers in order,
 *           and join gives its value
 *
 * The threads log into a list that main prints and checks against the
 * order glibc gives natively after each join (no stdio in the threads:
 * stdio calls can be cancellation points). Exits 1 on any wrong result.
 * Identical natively and under corun.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 32

static pthread_mutex_t log_m = PTHREAD_MUTEX_INITIALIZER;
static char events[MAX_EVENTS][120];
static int n_events;
static int failures;

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&log_m);
    if (n_events < MAX_EVENTS) {
        va_start(ap, fmt);
        vsnprintf(events[n_events++], sizeof events[0], fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&log_m);
}

static void expect(int ok, const char *part, const char *what)
{
    printf("%s: %s: %s\n", ok ? "ok" : "FAIL", part, what);
    if (!ok)
        failures++;
}

/* Prints the events since the last call, checks they are exactly `want`
 * (NULL-terminated), clears them. */
static void check_events(const char *part, const char *const *want)
{
    pthread_mutex_lock(&log_m);
    int same = 1, i;
    for (i = 0; i < n_events; i++) {
        printf("%s: %s\n", part, events[i]);
        same &= want[i] != NULL && strcmp(want[i], events[i]) == 0;
    }
    same &= want[i] == NULL;
    n_events = 0;
    pthread_mutex_unlock(&log_m);
    expect(same, part, "the events above, in this order, and no other");
}

/* pthread_join, given up after 10 s: a thread that was not cancelled
 * fails the check instead of hanging the program. */
static int join_within(pthread_t t, void **r)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    int rc = pthread_timedjoin_np(t, r, &ts);
    if (rc != 0)
        printf("join: %s\n", rc == ETIMEDOUT ? "still running after 10 s" : "failed");
    return rc;
}

static void handler(void *what) { note("handler: %s", (const char *)what); }

static sem_t ready;

/* Starts fn, waits until it posts `ready`, lets it reach its wait, cancels
 * it; returns pthread_cancel's result, and the join's in *join_rc, *ret. */
static int start_and_cancel(void *(*fn)(void *), int *join_rc, void **ret)
{
    pthread_t t;
    sem_init(&ready, 0, 0);
    pthread_create(&t, NULL, fn, NULL);
    sem_wait(&ready);
    usleep(50000);
    int rc = pthread_cancel(t);
    *join_rc = join_within(t, ret);
    return rc;
}

/* ---- pop ---- */

static void *pop_thread(void *arg)
{
    (void)arg;
    pthread_cleanup_push(handler, "popped with 1");
    note("pushed, popping with 1");
    pthread_cleanup_pop(1);
    pthread_cleanup_push(handler, "popped with 0 (must not run)");
    note("pushed, popping with 0");
    pthread_cleanup_pop(0);
    return (void *)5;
}

/* ---- read ---- */

static int dead_pipe[2];

static void read_inner(void)
{
    pthread_cleanup_push(handler, "inner frame, first");
    pthread_cleanup_push(handler, "inner frame, second");
    char c;
    note("read() on a pipe nobody writes");
    sem_post(&ready);
    ssize_t r = read(dead_pipe[0], &c, 1);
    note("NOT REACHED: read returned %zd", r);
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
}

static void read_middle(void)
{
    pthread_cleanup_push(handler, "middle frame");
    read_inner();
    note("NOT REACHED: after read_inner");
    pthread_cleanup_pop(0);
}

static void *read_thread(void *arg)
{
    (void)arg;
    pthread_cleanup_push(handler, "thread function");
    read_middle();
    note("NOT REACHED: after read_middle");
    pthread_cleanup_pop(0);
    return NULL;
}

/* ---- sleep ---- */

static void *sleep_thread(void *arg)
{
    (void)arg;
    pthread_cleanup_push(handler, "sleeper");
    struct timespec ts = {1000, 0};
    note("nanosleep(1000 s)");
    sem_post(&ready);
    int r = nanosleep(&ts, NULL);
    note("NOT REACHED: nanosleep returned %d", r);
    pthread_cleanup_pop(0);
    return NULL;
}

/* ---- condwait ---- */

static pthread_mutex_t cw_m;
static pthread_cond_t cw_cv = PTHREAD_COND_INITIALIZER;

static void unlock_handler(void *arg)
{
    int rc = pthread_mutex_unlock(arg); /* EPERM unless this thread holds it */
    note("handler: unlock the mutex -> %s", rc == 0 ? "0 (it held it)" : strerror(rc));
}

static void *condwait_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cw_m);
    pthread_cleanup_push(unlock_handler, &cw_m);
    note("pthread_cond_wait, nobody signals");
    sem_post(&ready);
    for (;;)
        pthread_cond_wait(&cw_cv, &cw_m);
    pthread_cleanup_pop(0);
    return NULL;
}

/* ---- disable ---- */

static int live_pipe[2];

static void *disabled_thread(void *arg)
{
    (void)arg;
    pthread_cleanup_push(handler, "disabled thread");
    pthread_testcancel();
    note("testcancel with nothing pending returned");
    int old = -1;
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old);
    note("cancel type was %s", old == PTHREAD_CANCEL_DEFERRED ? "DEFERRED" : "not DEFERRED");
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    note("cancel state was %s, now DISABLE", old == PTHREAD_CANCEL_ENABLE ? "ENABLE" : "not ENABLE");
    sem_post(&ready);
    char c = 0;
    ssize_t r = read(live_pipe[0], &c, 1); /* main cancels, then writes */
    note("read returned %zd '%c' with a cancel pending but disabled", r, c);
    int s = usleep(1000);
    note("usleep returned %d", s);
    pthread_testcancel();
    note("testcancel while disabled returned");
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
    note("cancel state was %s, now ENABLE", old == PTHREAD_CANCEL_DISABLE ? "DISABLE" : "not DISABLE");
    pthread_testcancel();
    note("NOT REACHED: after testcancel with the cancel enabled");
    pthread_cleanup_pop(0);
    return NULL;
}

/* ---- exit ---- */

static void exit_inner(void)
{
    pthread_cleanup_push(handler, "exit inner frame");
    note("pthread_exit(99)");
    pthread_exit((void *)99);
    pthread_cleanup_pop(0);
}

static void *exit_thread(void *arg)
{
    (void)arg;
    pthread_cleanup_push(handler, "exit thread function, first");
    pthread_cleanup_push(handler, "exit thread function, second");
    exit_inner();
    note("NOT REACHED: after exit_inner");
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    return NULL;
}

int main(void)
{
    pthread_t t;
    void *r = NULL;
    int rc, j;

    pthread_create(&t, NULL, pop_thread, NULL);
    j = join_within(t, &r);
    check_events("pop", (const char *const[]){"pushed, popping with 1", "handler: popped with 1",
                                               "pushed, popping with 0", NULL});
    expect(j == 0 && r == (void *)5, "pop", "join gives the thread's value");

    if (pipe(dead_pipe) != 0 || pipe(live_pipe) != 0) {
        perror("pipe");
        return 1;
    }
    rc = start_and_cancel(read_thread, &j, &r);
    check_events("read", (const char *const[]){"read() on a pipe nobody writes", "handler: inner frame, second",
                                                "handler: inner frame, first", "handler: middle frame",
                                                "handler: thread function", NULL});
    expect(rc == 0, "read", "pthread_cancel returns 0");
    expect(j == 0 && r == PTHREAD_CANCELED, "read", "join gives PTHREAD_CANCELED");

    rc = start_and_cancel(sleep_thread, &j, &r);
    check_events("sleep", (const char *const[]){"nanosleep(1000 s)", "handler: sleeper", NULL});
    expect(rc == 0, "sleep", "pthread_cancel returns 0");
    expect(j == 0 && r == PTHREAD_CANCELED, "sleep", "join gives PTHREAD_CANCELED");

    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&cw_m, &ma);
    rc = start_and_cancel(condwait_thread, &j, &r);
    check_events("condwait", (const char *const[]){"pthread_cond_wait, nobody signals",
                                                    "handler: unlock the mutex -> 0 (it held it)", NULL});
    expect(rc == 0, "condwait", "pthread_cancel returns 0");
    expect(j == 0 && r == PTHREAD_CANCELED, "condwait", "join gives PTHREAD_CANCELED");
    int lk = pthread_mutex_trylock(&cw_m);
    expect(lk == 0, "condwait", "main can lock the mutex afterwards");
    if (lk == 0)
        pthread_mutex_unlock(&cw_m);

    sem_init(&ready, 0, 0);
    pthread_create(&t, NULL, disabled_thread, NULL);
    sem_wait(&ready);
    usleep(20000); /* it waits in read() by now */
    rc = pthread_cancel(t);
    usleep(20000);
    ssize_t w = write(live_pipe[1], "x", 1);
    j = join_within(t, &r);
    check_events("disable", (const char *const[]){"testcancel with nothing pending returned",
                                                   "cancel type was DEFERRED",
                                                   "cancel state was ENABLE, now DISABLE",
                                                   "read returned 1 'x' with a cancel pending but disabled",
                                                   "usleep returned 0", "testcancel while disabled returned",
                                                   "cancel state was DISABLE, now ENABLE",
                                                   "handler: disabled thread", NULL});
    expect(rc == 0 && w == 1, "disable", "pthread_cancel returns 0, the byte is written");
    expect(j == 0 && r == PTHREAD_CANCELED, "disable", "join gives PTHREAD_CANCELED");

    pthread_create(&t, NULL, exit_thread, NULL);
    j = join_within(t, &r);
    check_events("exit", (const char *const[]){"pthread_exit(99)", "handler: exit inner frame",
                                                "handler: exit thread function, second",
                                                "handler: exit thread function, first", NULL});
    expect(j == 0 && r == (void *)99, "exit", "join gives the pthread_exit value");

    printf("cancel_read: %s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
