/*
 * cxx_thread_local - C++ thread_local, __thread and errno are per thread,
 * across parks. A plain C++20 program (std::thread), no corun header.
 *
 * 1,000 threads each write their own id into a namespace-scope
 * thread_local object (A), a function-local thread_local made later (B),
 * a thread_local std::vector, a __thread int and errno; they sleep, then
 * all wait in read() on one pipe until main has seen every thread ready
 * and writes one byte for each, then sleep again: after every park each
 * thread must still see only its own values, at the same addresses. When
 * the threads end, every destructor runs exactly once, on its own thread
 * (it still sees the thread's __thread id), B before A (reverse order of
 * construction). All the threads are alive at once, so the addresses of
 * their errno, __thread int and thread_local objects must be distinct.
 *
 * Prints summary lines; exits 1 on any wrong result. Identical natively
 * and under corun.
 */
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <set>
#include <thread>
#include <vector>

#include <unistd.h>

constexpr int N = 1000;

static std::atomic<int> constructed_a, destroyed_a, constructed_b, destroyed_b;
static std::atomic<int> dtor_a[N], dtor_b[N];
static std::atomic<int> wrong, wrong_dtor, out_of_order, ready;
static const void *errno_addr[N], *plain_addr[N], *a_addr[N], *b_addr[N];
static int pipe_fds[2];

static __thread int plain_id = -1;

static long pattern(int id, int k) { return id * 1000003L + k; }

struct A {
    int owner = -1;
    long payload[16];
    A()
    {
        constructed_a++;
        for (long &p : payload)
            p = -1;
    }
    ~A()
    {
        if (owner < 0 || owner >= N) {
            wrong_dtor++;
        } else {
            dtor_a[owner]++;
            if (dtor_b[owner].load() != 1)
                out_of_order++; /* B was constructed later: destroyed first */
            for (int k = 0; k < 16; k++)
                if (payload[k] != pattern(owner, k))
                    wrong_dtor++;
        }
        if (plain_id != owner) /* runs on its own thread */
            wrong_dtor++;
        destroyed_a++;
    }
};

struct B {
    int owner = -1;
    B() { constructed_b++; }
    ~B()
    {
        if (owner < 0 || owner >= N)
            wrong_dtor++;
        else
            dtor_b[owner]++;
        if (plain_id != owner)
            wrong_dtor++;
        destroyed_b++;
    }
};

thread_local A a;
thread_local std::vector<int> history;

static B &lazy_b()
{
    thread_local B b; /* constructed at the first call, in phase 3 */
    return b;
}

static void check(int i, const char *when, bool b_made, int want_errno)
{
    bool ok = plain_id == i && a.owner == i && &a == a_addr[i] && &errno == errno_addr[i] &&
              &plain_id == plain_addr[i];
    for (int k = 0; k < 16; k++)
        ok &= a.payload[k] == pattern(i, k);
    ok &= !history.empty() && history.back() == i && history.size() <= 3;
    for (int h : history)
        ok &= h == i;
    if (b_made)
        ok &= lazy_b().owner == i && &lazy_b() == b_addr[i];
    if (want_errno >= 0)
        ok &= errno == want_errno;
    if (!ok) {
        if (wrong.fetch_add(1) < 10)
            std::fprintf(stderr, "thread %d %s: sees plain_id %d, a.owner %d, errno %d (want %d)\n", i, when,
                         plain_id, a.owner, errno, want_errno);
    }
}

static void worker(int i)
{
    if ((plain_id != -1 || a.owner != -1 || !history.empty()) && wrong.fetch_add(1) < 10)
        std::fprintf(stderr, "thread %d starts with plain_id %d, a.owner %d, %zu history entries\n", i, plain_id,
                     a.owner, history.size()); /* a new thread starts with fresh values */
    plain_id = i;
    a.owner = i;
    for (int k = 0; k < 16; k++)
        a.payload[k] = pattern(i, k);
    history.push_back(i);
    errno_addr[i] = &errno;
    plain_addr[i] = &plain_id;
    a_addr[i] = &a;

    /* Park 1: a sleep; errno is kept (a successful usleep does not set it). */
    errno = 10000 + i;
    usleep(200 + (i % 7) * 150);
    check(i, "after the first sleep", false, 10000 + i);

    /* Park 2: every thread waits in read() until main saw all of them ready. */
    history.push_back(i);
    ready++;
    char c;
    if (read(pipe_fds[0], &c, 1) != 1 && wrong.fetch_add(1) < 10)
        std::fprintf(stderr, "thread %d: read failed\n", i);
    check(i, "after read", false, -1);

    /* Park 3: B made now; a sleep. */
    lazy_b().owner = i;
    b_addr[i] = &lazy_b();
    history.push_back(i);
    errno = 20000 + i;
    usleep(100 + (i % 5) * 200);
    check(i, "after the second sleep", true, 20000 + i);
}

int main()
{
    if (pipe(pipe_fds) != 0) {
        std::perror("pipe");
        return 1;
    }
    std::vector<std::thread> threads;
    threads.reserve(N);
    for (int i = 0; i < N; i++)
        threads.emplace_back(worker, i);
    while (ready.load() < N)
        usleep(1000);
    static char bytes[N];
    if (write(pipe_fds[1], bytes, N) != N) {
        std::perror("write");
        return 1;
    }
    for (auto &t : threads)
        t.join();

    int once_a = 0, once_b = 0;
    for (int i = 0; i < N; i++) {
        once_a += dtor_a[i].load() == 1;
        once_b += dtor_b[i].load() == 1;
    }
    std::set<const void *> errnos(errno_addr, errno_addr + N), plains(plain_addr, plain_addr + N),
        as(a_addr, a_addr + N), bs(b_addr, b_addr + N);

    std::printf("threads: %d joined, %d saw a value not their own\n", N, wrong.load());
    std::printf("thread_local A: %d constructed, %d destroyed, %d threads' exactly once\n", constructed_a.load(),
                destroyed_a.load(), once_a);
    std::printf("thread_local B (function-local, made later): %d constructed, %d destroyed, %d threads' exactly "
                "once, %d destroyed after A\n",
                constructed_b.load(), destroyed_b.load(), once_b, out_of_order.load());
    std::printf("destructors that saw another thread's values: %d\n", wrong_dtor.load());
    std::printf("distinct addresses: errno %zu, __thread int %zu, thread_local A %zu, B %zu\n", errnos.size(),
                plains.size(), as.size(), bs.size());
    std::printf("main's __thread int: %d\n", plain_id);
    bool ok = wrong.load() == 0 && constructed_a.load() == N && destroyed_a.load() == N && once_a == N &&
              constructed_b.load() == N && destroyed_b.load() == N && once_b == N && out_of_order.load() == 0 &&
              wrong_dtor.load() == 0 && errnos.size() == N && plains.size() == N && as.size() == N &&
              bs.size() == N && plain_id == -1;
    std::printf("cxx_thread_local: %s\n", ok ? "all checks passed" : "FAILED");
    return ok ? 0 : 1;
}
