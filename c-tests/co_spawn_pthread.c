/*
 * A coroutine made with corun_spawn (no thread record of its own) makes a
 * pthread, and asks for its timer slack and nice value: the new thread
 * inherits main's values, and the coroutine reads them too. The record
 * of the new thread was made from its creator's, and looking that up made
 * the creator's record, whose making looked it up again, for ever: the
 * coroutine overflowed its stack (corun's abort).
 *
 * stdout: main's slack and nice, then what the thread and the coroutine
 * read; exit 1 if a call failed or a value differs.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <corun.h>

static int slack0, nice0, bad;

static void check(const char *who)
{
    int slack = prctl(PR_GET_TIMERSLACK), nice = getpriority(PRIO_PROCESS, 0);
    printf("%s: slack %s, nice %s\n", who, slack == slack0 ? "main's" : "OTHER", nice == nice0 ? "main's" : "OTHER");
    bad |= slack != slack0 || nice != nice0;
}

static void *thread(void *arg)
{
    (void)arg;
    check("thread made by the coroutine");
    return NULL;
}

static void *coroutine(void *arg)
{
    (void)arg;
    pthread_t t;
    if (pthread_create(&t, NULL, thread, NULL) != 0 || pthread_join(t, NULL) != 0) {
        printf("pthread_create/join failed\n");
        bad = 1;
    }
    check("the corun_spawn coroutine");
    return NULL;
}

int main(void)
{
    slack0 = prctl(PR_GET_TIMERSLACK);
    nice0 = getpriority(PRIO_PROCESS, 0);
    corun_co_t *c = corun_spawn(coroutine, NULL);
    if (!c || corun_join(c, NULL) != 0) {
        printf("corun_spawn/join failed\n");
        return 1;
    }
    return bad;
}
