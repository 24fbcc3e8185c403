/*
 * thread_api - the pthread thread API as programs use it, a plain pthread
 * program (no corun header). Identical output natively and under corun.
 *
 *   thread_api            join values, pthread_exit from depth, distinct
 *                         pthread_self, detach, names, attributes and
 *                         stacks (6 MiB used on a default stack), kill 0,
 *                         tryjoin/timedjoin, a native thread joining
 *   thread_api main-exit  main calls pthread_exit: the threads finish, then
 *                         the process exits 0 and atexit handlers run once
 *   thread_api exit       a thread calls exit(3) while main waits in join:
 *                         status 3, atexit handlers run once
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL line %d: ", __LINE__);                                                    \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void *ret_arg(void *a) { return a; }

static void exit_deep(int depth, long v)
{
    if (depth < 0)
        return;
    char pad[128];
    memset(pad, depth, sizeof pad);
    if (depth == 0)
        pthread_exit((void *)v);
    exit_deep(depth - 1, v);
    __asm__ volatile("" ::"r"(pad) : "memory");
}

static void *exit_from_depth(void *a)
{
    exit_deep(50, (long)a * 3);
    return NULL;
}

#define SELFS 100
static pthread_t selfs[SELFS];
static void *record_self(void *a)
{
    selfs[(long)a] = pthread_self();
    usleep(1000);
    return NULL;
}

static sem_t detached_done;
static void *detached_body(void *a)
{
    (void)a;
    usleep(1000);
    sem_post(&detached_done);
    return NULL;
}

static void *self_detaching_body(void *a)
{
    (void)a;
    CHECK(pthread_detach(pthread_self()) == 0, "detach self");
    usleep(1000);
    sem_post(&detached_done);
    return NULL;
}

static char name_seen[32];
static void *named_body(void *a)
{
    (void)a;
    usleep(20000); /* the creator names this thread meanwhile */
    pthread_getname_np(pthread_self(), name_seen, sizeof name_seen);
    CHECK(pthread_setname_np(pthread_self(), "self-named") == 0, "setname self");
    return NULL;
}

static long stack_size_seen;
static int local_in_stack;
static void *attr_body(void *a)
{
    (void)a;
    pthread_attr_t at;
    if (pthread_getattr_np(pthread_self(), &at) == 0) {
        void *addr;
        size_t size;
        pthread_attr_getstack(&at, &addr, &size);
        stack_size_seen = (long)size;
        char here;
        local_in_stack = (char *)&here >= (char *)addr && (char *)&here < (char *)addr + size;
        pthread_attr_destroy(&at);
    }
    return NULL;
}

/* Uses 6 MiB of stack, as a thread may with glibc's default 8 MiB. */
static void *big_stack_body(void *a)
{
    (void)a;
    volatile char big[6 << 20];
    for (size_t i = 0; i < sizeof big; i += 4096)
        big[i] = (char)i;
    return (void *)(long)big[4096 * 7];
}

static void *sleeper(void *a)
{
    usleep(60000);
    return a;
}

static pthread_t join_target;
static atomic_long native_joined = -1;
static void native_joiner(union sigval v)
{
    (void)v;
    void *r = NULL;
    int e = pthread_join(join_target, &r);
    atomic_store(&native_joined, e == 0 ? (long)r : -100 - e);
}

static void api(void)
{
    /* join values and pthread_exit from depth */
    pthread_t t[20];
    for (long i = 0; i < 20; i++)
        pthread_create(&t[i], NULL, i % 2 ? exit_from_depth : ret_arg, (void *)i);
    long sum = 0;
    for (int i = 0; i < 20; i++) {
        void *r;
        CHECK(pthread_join(t[i], &r) == 0, "join %d", i);
        sum += (long)r;
    }
    CHECK(sum == 10 * 9 + 3 * 100, "sum of results %ld", sum); /* evens 0..18, odds x3 */
    printf("join: 20 results, 10 through pthread_exit at depth 50, sum %ld\n", sum);

    /* pthread_self: distinct, equal to what pthread_create returned */
    pthread_t s[SELFS];
    for (long i = 0; i < SELFS; i++)
        pthread_create(&s[i], NULL, record_self, (void *)i);
    for (int i = 0; i < SELFS; i++)
        pthread_join(s[i], NULL);
    int distinct = 1, equal = 1;
    for (int i = 0; i < SELFS; i++) {
        equal &= pthread_equal(s[i], selfs[i]) != 0;
        for (int j = 0; j < i; j++)
            distinct &= !pthread_equal(selfs[i], selfs[j]);
        distinct &= !pthread_equal(selfs[i], pthread_self());
    }
    CHECK(distinct && equal, "self distinct %d equal %d", distinct, equal);
    printf("self: %d threads, distinct ids, each equal to its pthread_create id\n", SELFS);

    /* detach: by attribute and by call */
    sem_init(&detached_done, 0, 0);
    pthread_attr_t da;
    pthread_attr_init(&da);
    pthread_attr_setdetachstate(&da, PTHREAD_CREATE_DETACHED);
    pthread_t d1, d2;
    CHECK(pthread_create(&d1, &da, detached_body, NULL) == 0, "create detached");
    CHECK(pthread_create(&d2, NULL, detached_body, NULL) == 0, "create");
    CHECK(pthread_detach(d2) == 0, "detach");
    pthread_t d3;
    CHECK(pthread_create(&d3, NULL, self_detaching_body, NULL) == 0, "create");
    sem_wait(&detached_done);
    sem_wait(&detached_done);
    sem_wait(&detached_done);
    pthread_attr_destroy(&da);
    printf("detach: by attribute, by pthread_detach, by the thread itself\n");

    /* names */
    pthread_t n;
    pthread_create(&n, NULL, named_body, NULL);
    CHECK(pthread_setname_np(n, "worker-name") == 0, "setname other");
    CHECK(pthread_setname_np(n, "a-name-much-too-long") == ERANGE, "setname too long");
    char small[8];
    CHECK(pthread_getname_np(n, small, sizeof small) == ERANGE, "getname small buffer");
    pthread_join(n, NULL);
    CHECK(strcmp(name_seen, "worker-name") == 0, "name seen '%s'", name_seen);
    printf("names: set by the creator, read by the thread: %s\n", name_seen);

    /* attributes and stacks */
    pthread_attr_t sa;
    pthread_attr_init(&sa);
    pthread_attr_setstacksize(&sa, 1 << 20);
    pthread_t a;
    pthread_create(&a, &sa, attr_body, NULL);
    pthread_join(a, NULL);
    pthread_attr_destroy(&sa);
    CHECK(stack_size_seen >= (1 << 20) && local_in_stack, "stack %ld, local inside %d", stack_size_seen,
          local_in_stack);
    pthread_t b;
    pthread_create(&b, NULL, big_stack_body, NULL);
    pthread_join(b, NULL);
    printf("stacks: a 1 MiB attribute gives >= 1 MiB containing the thread's locals; 6 MiB used on a "
           "default stack\n");

    /* kill 0, tryjoin, timedjoin */
    pthread_t w;
    pthread_create(&w, NULL, sleeper, (void *)5);
    CHECK(pthread_kill(w, 0) == 0, "kill 0 on a live thread");
    CHECK(pthread_kill(pthread_self(), 0) == 0, "kill 0 on main");
    char mname[16] = "";
    CHECK(pthread_getname_np(pthread_self(), mname, sizeof mname) == 0 && strcmp(mname, "thread_api") == 0,
          "main's name '%s'", mname);
    CHECK(pthread_tryjoin_np(w, NULL) == EBUSY, "tryjoin running");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 10000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    CHECK(pthread_timedjoin_np(w, NULL, &ts) == ETIMEDOUT, "timedjoin timeout");
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    void *r = NULL;
    CHECK(pthread_timedjoin_np(w, &r, &ts) == 0 && (long)r == 5, "timedjoin");
    printf("kill 0, tryjoin (EBUSY), timedjoin (ETIMEDOUT, then the result)\n");

    /* a native thread (glibc's SIGEV_THREAD timer thread) joins a thread */
    pthread_create(&join_target, NULL, sleeper, (void *)42);
    timer_t tm;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = native_joiner;
    timer_create(CLOCK_MONOTONIC, &sev, &tm);
    struct itimerspec its = {.it_value = {.tv_sec = 0, .tv_nsec = 1000000}};
    timer_settime(tm, 0, &its, NULL);
    for (int i = 0; i < 1000 && atomic_load(&native_joined) == -1; i++)
        usleep(10000);
    timer_delete(tm);
    CHECK(atomic_load(&native_joined) == 42, "native join got %ld", atomic_load(&native_joined));
    printf("a native thread joined a thread and got %ld\n", atomic_load(&native_joined));
}

static atomic_int atexit_runs;
static void at_exit(void)
{
    printf("atexit handler ran (%d)\n", atomic_fetch_add(&atexit_runs, 1) + 1);
    fflush(stdout);
}

/* Threads that finish after main's pthread_exit, in turn: thread i prints
 * once thread i-1 has (the 10 ms steps between their sleeps alone swapped
 * two of them at load 20). */
static atomic_int finished;
static void *finish_later(void *a)
{
    long me = (long)a;
    usleep(50000 + 10000 * (unsigned)me);
    for (int i = 0; atomic_load(&finished) < me && i < 10000; i++) /* bounded: 10 s */
        usleep(1000);
    printf("thread %ld finished\n", me);
    fflush(stdout);
    atomic_fetch_add(&finished, 1);
    return NULL;
}

static void *call_exit(void *a)
{
    (void)a;
    usleep(20000);
    exit(3);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "main-exit") == 0) {
        atexit(at_exit);
        for (long i = 0; i < 3; i++) {
            pthread_t t;
            pthread_create(&t, NULL, finish_later, (void *)i);
        }
        printf("main calls pthread_exit\n");
        pthread_exit(NULL);
    }
    if (argc > 1 && strcmp(argv[1], "exit") == 0) {
        atexit(at_exit);
        pthread_t t;
        pthread_create(&t, NULL, call_exit, NULL);
        pthread_join(t, NULL);
        printf("FAIL: join returned\n");
        return 1;
    }
    api();
    if (failures) {
        printf("thread_api: %d failure(s)\n", failures);
        return 1;
    }
    printf("thread_api: all passed\n");
    return 0;
}
