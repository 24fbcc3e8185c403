// cxx_once_retry - a once whose routine does not return may run again, as
// glibc's pthread_once allows (its cleanup resets the control):
//   1. std::call_once whose callable throws, retried by the same thread;
//   2. the same with main waiting on the flag while another thread's
//      callable throws (the thread catches it and ends);
//   3. pthread_exit inside the routine while main waits on the once;
//   4. a cancellation inside the routine (at a sleep), then main's call.
// Prints one line per case; every case must end (scripts/tests/once_retry.sh).
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>

static std::once_flag flag1, flag2;
static pthread_once_t once3 = PTHREAD_ONCE_INIT, once4 = PTHREAD_ONCE_INIT;
static std::atomic<int> runs3{0}, runs4{0};

static void init3_exit() { runs3++; usleep(30000); pthread_exit(nullptr); }
static void init3_ok() { runs3++; }
static void init4_forever() { runs4++; for (;;) usleep(1000); }
static void init4_ok() { runs4++; }

int main()
{
    int attempts = 0;
    try {
        std::call_once(flag1, [&] { attempts++; throw std::runtime_error("first"); });
    } catch (const std::exception &e) {
        std::printf("1: caught %s\n", e.what());
    }
    std::call_once(flag1, [&] { attempts++; });
    std::printf("1: %d attempts\n", attempts);

    std::atomic<int> tries{0};
    std::atomic<bool> in_callable{false};
    std::thread t([&] {
        try {
            std::call_once(flag2, [&] {
                tries++;
                in_callable = true;
                usleep(30000);
                throw std::runtime_error("second");
            });
        } catch (const std::exception &e) {
            std::printf("2: thread caught %s\n", e.what());
        }
    });
    while (!in_callable)
        usleep(1000);
    bool mine = false;
    std::call_once(flag2, [&] { tries++; mine = true; });
    t.join();
    std::printf("2: %d tries, main's callable ran: %s\n", tries.load(), mine ? "yes" : "no");

    pthread_t th;
    pthread_create(&th, nullptr, [](void *) -> void * { pthread_once(&once3, init3_exit); return nullptr; }, nullptr);
    while (runs3 == 0)
        usleep(1000);
    pthread_once(&once3, init3_ok);
    pthread_join(th, nullptr);
    std::printf("3: routine ran %d times\n", runs3.load());

    pthread_create(&th, nullptr, [](void *) -> void * { pthread_once(&once4, init4_forever); return nullptr; }, nullptr);
    while (runs4 == 0)
        usleep(1000);
    pthread_cancel(th);
    void *res = nullptr;
    pthread_join(th, &res);
    pthread_once(&once4, init4_ok);
    std::printf("4: %s, routine ran %d times\n", res == PTHREAD_CANCELED ? "cancelled" : "not cancelled", runs4.load());
    return 0;
}
