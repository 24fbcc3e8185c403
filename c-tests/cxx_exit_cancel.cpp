/*
 * cxx_exit_cancel - pthread_exit and pthread_cancel unwind C++ frames.
 * A plain C++20 program, no corun header.
 *
 *  exit    pthread_exit from three nested frames holding RAII objects, a
 *          std::lock_guard on a std::mutex and a pthread_cleanup_push
 *          handler: every destructor and the handler run, innermost first,
 *          a catch (abi::__forced_unwind &) that rethrows sees the unwind,
 *          the join returns the exit value, and the mutex is released (a
 *          thread waiting for it gets it; main's try_lock succeeds).
 *  cancel  pthread_cancel of a thread parked in read() on a pipe nobody
 *          writes: join returns PTHREAD_CANCELED, the RAII destructors and
 *          cleanup handlers ran, nothing after the read ran.
 *  disable a cancel sent while the thread has cancellation disabled waits
 *          (its read() on a pipe that main then writes to returns the
 *          byte, its usleep completes) until it enables it again; then
 *          pthread_testcancel acts on it.
 *
 * The threads log what happens into a list main prints after each join
 * (no stdio in the threads: stdio calls can be cancellation points).
 * Exits 1 if a result is wrong. Identical natively and under corun.
 */
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <cxxabi.h>
#include <mutex>
#include <string>
#include <vector>

#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

static std::mutex log_m;
static std::vector<std::string> events;
static int failures;

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
    char buf[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::lock_guard<std::mutex> g(log_m);
    events.emplace_back(buf);
}

static void expect(bool ok, const char *what)
{
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    if (!ok)
        failures++;
}

/* pthread_join, given up after 10 s (so that a thread that was not
 * cancelled fails the check instead of hanging the program). */
static int join_within(pthread_t t, void **r)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    int rc = pthread_timedjoin_np(t, r, &ts);
    if (rc != 0)
        std::printf("join: %s\n", rc == ETIMEDOUT ? "still running after 10 s" : "failed");
    return rc;
}

/* Prints the events logged since the last call, checks they are exactly
 * `want` (the order glibc gives natively), then clears them. */
static void check_events(const char *part, const std::vector<std::string> &want)
{
    std::lock_guard<std::mutex> g(log_m);
    for (auto &e : events)
        std::printf("%s: %s\n", part, e.c_str());
    std::string what = std::string(part) + ": the events above, in this order, and no other";
    expect(events == want, what.c_str());
    events.clear();
}

struct Noisy {
    const char *name;
    explicit Noisy(const char *n) : name(n) { note("construct %s", name); }
    ~Noisy() { note("destroy %s", name); }
};

static void cleanup(void *what) { note("cleanup handler: %s", static_cast<const char *>(what)); }

/* ---- exit ---- */

static std::mutex em;
static sem_t exit_locked, exit_go;

[[noreturn]] static void exit_level3()
{
    Noisy n("level3 object");
    note("level3 calls pthread_exit(42)");
    pthread_exit(reinterpret_cast<void *>(42));
}

static void exit_level2()
{
    Noisy n("level2 object");
    pthread_cleanup_push(cleanup, const_cast<char *>("pushed in level2"));
    exit_level3();
    pthread_cleanup_pop(0);
}

static void exit_level1()
{
    Noisy n("level1 object (outside the lock)");
    std::lock_guard<std::mutex> g(em);
    note("level1 holds the mutex");
    sem_post(&exit_locked);
    sem_wait(&exit_go); /* a waiter is now blocked on the mutex */
    exit_level2();
    note("NOT REACHED: after level2");
}

static void *exit_thread(void *)
{
    Noisy n("thread function object");
    try {
        exit_level1();
    } catch (abi::__forced_unwind &) {
        note("catch (abi::__forced_unwind &): rethrow");
        throw;
    }
    note("NOT REACHED: after level1");
    return nullptr;
}

static void *mutex_waiter(void *)
{
    bool was_held = !em.try_lock();
    if (was_held)
        em.lock(); /* waits until the exiting thread's lock_guard is destroyed */
    em.unlock();
    return reinterpret_cast<void *>(was_held ? 7 : 8);
}

static void part_exit()
{
    sem_init(&exit_locked, 0, 0);
    sem_init(&exit_go, 0, 0);
    pthread_t t, w;
    pthread_create(&t, nullptr, exit_thread, nullptr);
    sem_wait(&exit_locked);
    pthread_create(&w, nullptr, mutex_waiter, nullptr);
    usleep(20000); /* let the waiter block on the mutex */
    sem_post(&exit_go);
    void *r = nullptr, *wr = nullptr;
    int jt = join_within(t, &r);
    int jw = join_within(w, &wr);
    check_events("exit", {
                             "construct thread function object",
                             "construct level1 object (outside the lock)",
                             "level1 holds the mutex",
                             "construct level2 object",
                             "construct level3 object",
                             "level3 calls pthread_exit(42)",
                             "destroy level3 object",
                             "cleanup handler: pushed in level2",
                             "destroy level2 object",
                             "destroy level1 object (outside the lock)",
                             "catch (abi::__forced_unwind &): rethrow",
                             "destroy thread function object",
                         });
    std::printf("exit: join returned %d, value %ld\n", jt, reinterpret_cast<long>(r));
    expect(jt == 0 && r == reinterpret_cast<void *>(42), "exit: pthread_join gives the pthread_exit value");
    expect(jw == 0 && wr == reinterpret_cast<void *>(7), "exit: a thread found the mutex held, waited for it and got it");
    bool free_now = em.try_lock();
    if (free_now)
        em.unlock();
    expect(free_now, "exit: main's try_lock on the mutex succeeds afterwards");
}

/* ---- cancel in read ---- */

static int dead_pipe[2];
static sem_t reader_ready;

static void reader_inner()
{
    Noisy n("reader inner object");
    pthread_cleanup_push(cleanup, const_cast<char *>("reader inner"));
    char c;
    note("reader calls read() on a pipe nobody writes");
    sem_post(&reader_ready);
    ssize_t r = read(dead_pipe[0], &c, 1);
    note("NOT REACHED: read returned %zd", r);
    pthread_cleanup_pop(0);
}

static void *reader_thread(void *)
{
    Noisy n("reader outer object");
    pthread_cleanup_push(cleanup, const_cast<char *>("reader outer"));
    int old = -1;
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old);
    note("cancel type was %s", old == PTHREAD_CANCEL_DEFERRED ? "DEFERRED" : "not DEFERRED");
    try {
        reader_inner();
    } catch (abi::__forced_unwind &) {
        note("catch (abi::__forced_unwind &): rethrow");
        throw;
    }
    note("NOT REACHED: after reader_inner");
    pthread_cleanup_pop(0);
    return nullptr;
}

static void part_cancel()
{
    if (pipe(dead_pipe) != 0) {
        std::perror("pipe");
        failures++;
        return;
    }
    sem_init(&reader_ready, 0, 0);
    pthread_t t;
    pthread_create(&t, nullptr, reader_thread, nullptr);
    sem_wait(&reader_ready);
    usleep(50000); /* it is waiting in read() by now */
    int rc = pthread_cancel(t);
    void *r = nullptr;
    int j = join_within(t, &r);
    check_events("cancel", {
                               "construct reader outer object",
                               "cancel type was DEFERRED",
                               "construct reader inner object",
                               "reader calls read() on a pipe nobody writes",
                               "cleanup handler: reader inner",
                               "destroy reader inner object",
                               "catch (abi::__forced_unwind &): rethrow",
                               "cleanup handler: reader outer",
                               "destroy reader outer object",
                           });
    expect(rc == 0, "cancel: pthread_cancel returns 0");
    expect(j == 0 && r == PTHREAD_CANCELED, "cancel: pthread_join gives PTHREAD_CANCELED");
    if (j == 0) { /* else the thread may still be in read() */
        close(dead_pipe[0]);
        close(dead_pipe[1]);
    }
}

/* ---- cancel while disabled ---- */

static int live_pipe[2];
static sem_t disabled_ready;

static void *disabled_thread(void *)
{
    Noisy n("disabled-thread object");
    pthread_cleanup_push(cleanup, const_cast<char *>("disabled thread"));
    pthread_testcancel();
    note("testcancel with nothing pending returned");
    int old = -1;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    note("cancel state was %s, now DISABLE", old == PTHREAD_CANCEL_ENABLE ? "ENABLE" : "not ENABLE");
    sem_post(&disabled_ready);
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
    return nullptr;
}

static void part_disable()
{
    if (pipe(live_pipe) != 0) {
        std::perror("pipe");
        failures++;
        return;
    }
    sem_init(&disabled_ready, 0, 0);
    pthread_t t;
    pthread_create(&t, nullptr, disabled_thread, nullptr);
    sem_wait(&disabled_ready);
    usleep(20000); /* it is waiting in read() by now */
    int rc = pthread_cancel(t);
    usleep(20000);
    ssize_t w = write(live_pipe[1], "x", 1);
    void *r = nullptr;
    int j = join_within(t, &r);
    check_events("disable", {
                                "construct disabled-thread object",
                                "testcancel with nothing pending returned",
                                "cancel state was ENABLE, now DISABLE",
                                "read returned 1 'x' with a cancel pending but disabled",
                                "usleep returned 0",
                                "testcancel while disabled returned",
                                "cancel state was DISABLE, now ENABLE",
                                "cleanup handler: disabled thread",
                                "destroy disabled-thread object",
                            });
    expect(rc == 0 && w == 1, "disable: pthread_cancel returns 0, the byte is written");
    expect(j == 0 && r == PTHREAD_CANCELED, "disable: pthread_join gives PTHREAD_CANCELED");
    if (j == 0) {
        close(live_pipe[0]);
        close(live_pipe[1]);
    }
}

int main()
{
    part_exit();
    part_cancel();
    part_disable();
    std::printf("cxx_exit_cancel: %s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
