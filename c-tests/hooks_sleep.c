/*
 * hooks_sleep - sleep family transcript (see transcript.h).
 *
 * sleep, usleep, nanosleep and clock_nanosleep (relative and TIMER_ABSTIME,
 * monotonic, realtime and boottime clocks, a deadline already past, bad
 * timespecs and clocks): results, errno (or the returned error number for
 * clock_nanosleep), that each slept at least as asked, and that a sleep no
 * signal interrupted leaves `rem` alone.
 */
#include <time.h>

#include "transcript.h"

static struct timespec in_ms(clockid_t c, long ms)
{
    struct timespec t;
    clock_gettime(c, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

int main(void)
{
    tr_start();
    uint64_t t0;
    struct timespec req = {0, 50000000}, rem = {77, 77};

    t0 = tr_now_ms();
    WAITS("nanosleep 50ms", nanosleep(&req, &rem));
    CHECK("slept 50ms", tr_now_ms() - t0 >= 50);
    CHECK("rem left alone", rem.tv_sec == 77 && rem.tv_nsec == 77);
    req.tv_nsec = 0;
    T("nanosleep 0", nanosleep(&req, NULL));
    req.tv_nsec = 1000000000L;
    T("nanosleep tv_nsec 1e9", nanosleep(&req, NULL));
    req.tv_sec = -1;
    req.tv_nsec = 0;
    T("nanosleep tv_sec -1", nanosleep(&req, NULL));
    t0 = tr_now_ms();
    WAITS("usleep 50000", usleep(50000));
    CHECK("slept 50ms", tr_now_ms() - t0 >= 50);
    T("usleep 0", usleep(0));
    t0 = tr_now_ms();
    WAITS("sleep 1", sleep(1));
    CHECK("slept 1s", tr_now_ms() - t0 >= 1000);
    T("sleep 0", sleep(0));

    struct timespec d = {0, 50000000};
    t0 = tr_now_ms();
    WAITS("clock_nanosleep MONOTONIC 50ms", clock_nanosleep(CLOCK_MONOTONIC, 0, &d, &rem));
    CHECK("slept 50ms", tr_now_ms() - t0 >= 50);
    struct timespec at = in_ms(CLOCK_MONOTONIC, 50);
    t0 = tr_now_ms();
    WAITS("clock_nanosleep MONOTONIC abstime +50ms", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL));
    CHECK("slept ~50ms", tr_now_ms() - t0 >= 45);
    at = in_ms(CLOCK_REALTIME, 50);
    t0 = tr_now_ms();
    WAITS("clock_nanosleep REALTIME abstime +50ms", clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL));
    CHECK("slept ~50ms", tr_now_ms() - t0 >= 45);
    t0 = tr_now_ms();
    WAITS("clock_nanosleep BOOTTIME 50ms", clock_nanosleep(CLOCK_BOOTTIME, 0, &d, NULL));
    CHECK("slept 50ms", tr_now_ms() - t0 >= 50);
    at = in_ms(CLOCK_MONOTONIC, -1000);
    T("clock_nanosleep abstime in the past", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL));
    d.tv_nsec = -1;
    T("clock_nanosleep bad timespec", clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL));
    d.tv_nsec = 1000;
    T("clock_nanosleep bad clock", clock_nanosleep(12345, 0, &d, NULL));
    T("clock_nanosleep thread CPU clock", clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &d, NULL));
    return tr_end();
}
