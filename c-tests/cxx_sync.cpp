/*
 * cxx_sync - C++20 synchronisation whose waits reach the kernel through
 * syscall(SYS_futex, ...) in libstdc++, not through pthread functions:
 * std::latch, std::barrier, std::counting_semaphore, std::atomic::wait and
 * notify_one/notify_all, std::promise/std::future.
 *
 * Every part makes threads really wait (a short sleep before the other
 * side acts, so the wait gets past libstdc++'s spinning into the futex),
 * many times, and prints exact counts: the output is the same natively
 * and under corun, with one worker or several. With one worker, a futex
 * wait that blocked the worker instead of parking the coroutine would
 * deadlock (the test is bounded in time).
 *
 *   cxx_sync [part]   part: latch barrier semaphore atomic future timed (default: all)
 */
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <latch>
#include <semaphore>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace std::chrono_literals;

static void nap() { usleep(200); }

/* 8 threads: each arrives after a nap; main waits. Then they all wait on
 * a second latch that main opens after a nap. 50 rounds. */
static void part_latch()
{
    std::atomic<long> arrived{0}, released{0};
    for (int round = 0; round < 50; round++) {
        std::latch done(8), go(1);
        std::vector<std::thread> ts;
        for (int i = 0; i < 8; i++)
            ts.emplace_back([&, i] {
                if (i % 2)
                    nap();
                arrived++;
                done.count_down();
                go.wait();
                released++;
            });
        done.wait();
        nap();
        go.count_down();
        for (auto &t : ts)
            t.join();
    }
    printf("latch: %ld arrived, %ld released\n", arrived.load(), released.load());
}

/* 6 threads x 300 phases; one thread naps each phase so the others wait.
 * The completion step checks that every thread added its share. */
static void part_barrier()
{
    constexpr int N = 6, PHASES = 300;
    std::atomic<long> sum{0};
    long phases = 0, bad = 0;
    auto done = [&]() noexcept {
        phases++;
        if (sum.load() != phases * N)
            bad++;
    };
    std::barrier bar(N, done);
    std::vector<std::thread> ts;
    for (int i = 0; i < N; i++)
        ts.emplace_back([&, i] {
            for (int p = 0; p < PHASES; p++) {
                if (p % N == i)
                    nap();
                sum++;
                bar.arrive_and_wait();
            }
        });
    for (auto &t : ts)
        t.join();
    printf("barrier: %ld phases, sum %ld, %ld bad phases\n", phases, sum.load(), bad);
}

/* A bounded buffer of 4 slots: 3 producers, 3 consumers, 3,000 items,
 * counting_semaphore for free slots and for items, binary_semaphore as the
 * lock. Consumers nap now and then so producers fill the buffer and wait. */
static void part_semaphore()
{
    constexpr int P = 3, C = 3, PER = 1000, SLOTS = 4;
    std::counting_semaphore<SLOTS> free_slots(SLOTS);
    std::counting_semaphore<P * PER> items(0);
    std::binary_semaphore lock(1);
    long buf[SLOTS];
    int head = 0, tail = 0;
    std::atomic<long> got_sum{0}, got_n{0};
    std::vector<std::thread> ts;
    for (int p = 0; p < P; p++)
        ts.emplace_back([&, p] {
            for (int i = 1; i <= PER; i++) {
                free_slots.acquire();
                lock.acquire();
                buf[tail] = (long)p * PER + i;
                tail = (tail + 1) % SLOTS;
                lock.release();
                items.release();
            }
        });
    for (int c = 0; c < C; c++)
        ts.emplace_back([&] {
            for (int i = 0; i < PER; i++) {
                if (i % 100 == 0)
                    nap();
                items.acquire();
                lock.acquire();
                long v = buf[head];
                head = (head + 1) % SLOTS;
                lock.release();
                free_slots.release();
                got_sum += v;
                got_n++;
            }
        });
    for (auto &t : ts)
        t.join();
    long want = 0;
    for (long v = 1; v <= (long)P * PER; v++)
        want += v;
    printf("semaphore: %ld items, sum %s\n", got_n.load(), got_sum.load() == want ? "right" : "WRONG");
}

/* Ping-pong of one atomic between two threads (wait/notify_one), 2,000
 * rounds, then 8 waiters released by one notify_all, 20 times. */
static void part_atomic()
{
    std::atomic<int> turn{0};
    long pings = 0, pongs = 0;
    std::thread pong([&] {
        for (int i = 0; i < 2000; i++) {
            turn.wait(0);
            if (i % 50 == 0)
                nap();
            pongs++;
            turn.store(0);
            turn.notify_one();
        }
    });
    for (int i = 0; i < 2000; i++) {
        if (i % 50 == 25)
            nap();
        pings++;
        turn.store(1);
        turn.notify_one();
        turn.wait(1);
    }
    pong.join();
    long woken = 0;
    for (int round = 0; round < 20; round++) {
        std::atomic<int> gate{0};
        std::atomic<int> waiting{0}, through{0};
        std::vector<std::thread> ts;
        for (int i = 0; i < 8; i++)
            ts.emplace_back([&] {
                waiting++;
                gate.wait(0);
                through++;
            });
        while (waiting.load() < 8)
            std::this_thread::yield();
        nap();
        gate.store(1);
        gate.notify_all();
        for (auto &t : ts)
            t.join();
        woken += through.load();
    }
    printf("atomic: %ld pings, %ld pongs, %ld released by notify_all\n", pings, pongs, woken);
}

/* A consumer thread takes 400 futures in turn from a producer that naps
 * before setting most values (the consumer waits in get()), plus
 * std::async tasks and a shared_future waited on by 4 threads. */
static void part_future()
{
    constexpr int N = 400;
    std::vector<std::promise<long>> ps(N);
    std::vector<std::future<long>> fs;
    for (auto &p : ps)
        fs.push_back(p.get_future());
    long sum = 0;
    std::thread consumer([&] {
        for (auto &f : fs)
            sum += f.get();
    });
    std::thread producer([&] {
        for (int i = 0; i < N; i++) {
            if (i % 4)
                nap();
            ps[i].set_value(i + 1);
        }
    });
    producer.join();
    consumer.join();
    std::vector<std::future<long>> as;
    for (long i = 1; i <= 20; i++)
        as.push_back(std::async(std::launch::async, [i] {
            nap();
            return i * i;
        }));
    long squares = 0;
    for (auto &f : as)
        squares += f.get();
    std::promise<int> start;
    std::shared_future<int> sf = start.get_future().share();
    std::atomic<long> seen{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; i++)
        ts.emplace_back([&] { seen += sf.get(); });
    nap();
    start.set_value(10);
    for (auto &t : ts)
        t.join();
    printf("future: sum %ld (want %ld), async squares %ld, shared %ld\n", sum,
           (long)N * (N + 1) / 2, squares, seen.load());
}

/* Timed waits that time out (nobody acts) and that are satisfied in time. */
static void part_timed()
{
    std::counting_semaphore<1> s(0);
    auto t0 = std::chrono::steady_clock::now();
    bool got = s.try_acquire_for(30ms);
    auto waited = std::chrono::steady_clock::now() - t0;
    printf("timed: try_acquire_for 30ms with nobody posting: %d, waited >= 30ms: %d\n", got,
           waited >= 30ms);
    std::thread poster([&] {
        nap();
        s.release();
    });
    got = s.try_acquire_for(10s);
    poster.join();
    printf("timed: try_acquire_for 10s, posted after a nap: %d\n", got);
    std::promise<int> p;
    auto f = p.get_future();
    t0 = std::chrono::steady_clock::now();
    auto st = f.wait_for(30ms);
    waited = std::chrono::steady_clock::now() - t0;
    printf("timed: future wait_for 30ms: %s, waited >= 30ms: %d\n",
           st == std::future_status::timeout ? "timeout" : "ready", waited >= 30ms);
    std::thread setter([&] {
        nap();
        p.set_value(1);
    });
    st = f.wait_until(std::chrono::system_clock::now() + 10s);
    setter.join();
    printf("timed: future wait_until +10s, set after a nap: %s\n",
           st == std::future_status::ready ? "ready" : "timeout");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const char *only = argc > 1 ? argv[1] : nullptr;
    struct {
        const char *name;
        void (*fn)();
    } parts[] = {{"latch", part_latch},   {"barrier", part_barrier}, {"semaphore", part_semaphore},
                 {"atomic", part_atomic}, {"future", part_future},   {"timed", part_timed}};
    for (auto &p : parts)
        if (!only || !strcmp(only, p.name))
            p.fn();
    return 0;
}
