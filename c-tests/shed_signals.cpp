// Threads that move between workers often (src/sched/shed.rs) keep their
// own state through the moves: seven threads take turns at a lock held
// while computing 2-10 ms (as a GIL is), throw and catch C++ exceptions,
// wait on a condition variable with a timeout, while another thread sends
// them SIGUSR1 at random every 300 us and an interval timer sends the
// process SIGALRM every 3 ms. Each thread checks its thread_local values,
// errno, gettid and pthread_self after each turn; each SIGUSR1 handler
// checks it runs in the thread it was sent to (its thread_local id
// against pthread_self). With 2 workers about 900 moves a run, with 4
// about 1,100 (CORUN_STATS). Prints "done bad=0".
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

static constexpr int N = 7;
static thread_local long tl_id = -1;
static thread_local std::string tl_str;
static std::atomic<int> bad{0}, stopsig{0}, finished{0};
static std::mutex gil;
static std::condition_variable gcv;
static pthread_t all[N];

static void check(long id, pid_t tid, pthread_t self, const char *where)
{
    if (tl_id != id || tl_str != "t" + std::to_string(id) || syscall(SYS_gettid) != tid ||
        !pthread_equal(self, pthread_self())) {
        fprintf(stderr, "thread %ld: state differs %s (thread_local id %ld)\n", id, where, tl_id);
        bad++;
    }
}

static unsigned long spin(unsigned long x, long n)
{
    for (long k = 0; k < n; k++)
        x = x * 6364136223846793005UL + k;
    return x;
}

static void on_alarm(int) {}

static void on_usr1(int)
{
    int e = errno;
    long who = -1;
    for (int i = 0; i < N; i++)
        if (pthread_equal(all[i], pthread_self()))
            who = i;
    // -1: the thread had not set it yet.
    if (tl_id != -1 && who != tl_id) {
        static std::atomic<int> once{0};
        if (!once++)
            fprintf(stderr, "SIGUSR1 handler: pthread_self is thread %ld, thread_local id %ld\n", who, tl_id);
        bad++;
    }
    errno = e;
}

static void *signaler(void *)
{
    unsigned r = 1;
    while (!stopsig) {
        r = r * 1103515245 + 12345;
        pthread_kill(all[(r >> 8) % N], SIGUSR1);
        usleep(300);
    }
    return nullptr;
}

static void *worker(void *p)
{
    long id = (long)p;
    tl_id = id;
    tl_str = "t" + std::to_string(id);
    pid_t tid = syscall(SYS_gettid);
    pthread_t self = pthread_self();
    unsigned long x = id;
    unsigned r = id * 7919 + 1;
    for (int it = 0; it < 40; it++) {
        r = r * 1103515245 + 12345;
        {
            std::unique_lock<std::mutex> l(gil);
            errno = 1000 + id;
            x = spin(x, 2000000 + (r >> 8) % 8000000);
            if (errno != 1000 + id) {
                fprintf(stderr, "thread %ld: errno %d\n", id, errno);
                bad++;
            }
            check(id, tid, self, "holding the lock");
        }
        gcv.notify_one();
        try {
            std::vector<char> v(1000 + (r % 100000));
            if ((r >> 4) % 3 == 0)
                throw std::runtime_error(tl_str);
            x += v.size();
        } catch (std::runtime_error &e) {
            if (e.what() != tl_str) {
                fprintf(stderr, "thread %ld: caught %s\n", id, e.what());
                bad++;
            }
        }
        x = spin(x, (id % 3 == 0) ? 6000000 : 300000);
        if (it % 5 == 0) {
            std::unique_lock<std::mutex> l(gil);
            gcv.wait_for(l, std::chrono::microseconds(500));
        }
        check(id, tid, self, "after its turn");
    }
    // Alive until the signaler stops: pthread_kill of an ended thread is
    // undefined.
    finished++;
    while (!stopsig)
        usleep(1000);
    return (void *)(x & 1);
}

int main()
{
    signal(SIGALRM, on_alarm);
    signal(SIGUSR1, on_usr1);
    struct itimerval iv = {{0, 3000}, {0, 3000}};
    setitimer(ITIMER_REAL, &iv, nullptr);
    for (long i = 0; i < N; i++)
        pthread_create(&all[i], nullptr, worker, (void *)i);
    pthread_t sg;
    pthread_create(&sg, nullptr, signaler, nullptr);
    while (finished < N)
        usleep(1000);
    stopsig = 1;
    pthread_join(sg, nullptr);
    for (int i = 0; i < N; i++)
        pthread_join(all[i], nullptr);
    iv = {};
    setitimer(ITIMER_REAL, &iv, nullptr);
    printf("done bad=%d\n", bad.load());
    return bad != 0;
}
