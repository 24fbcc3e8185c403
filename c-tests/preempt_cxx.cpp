// std::threads that compute and throw: preempted like C threads although
// they start in libstdc++ (its execute_native_thread_routine is below every
// frame of theirs), never while the unwinder holds the loader's lock, and
// with the same results as natively.
//
// usage: preempt_cxx [THREADS [ROUNDS]]; stdout: each thread's checksum.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 4;
    long rounds = argc > 2 ? std::atol(argv[2]) : 200000;
    if (n < 1 || n > 64)
        return 2;
    std::vector<uint64_t> out(n);
    std::vector<std::thread> threads;
    for (int t = 0; t < n; t++)
        threads.emplace_back([t, rounds, &out] {
            uint64_t h = t + 1;
            long thrown = 0;
            for (long i = 0; i < rounds; i++) {
                try {
                    for (int k = 0; k < 200; k++) {
                        h ^= h << 13;
                        h ^= h >> 7;
                        h ^= h << 17;
                    }
                    if ((h & 3) == 0)
                        throw std::runtime_error("odd");
                } catch (const std::exception &e) {
                    h += (uint64_t)e.what()[0];
                    thrown++;
                }
            }
            out[t] = h ^ (uint64_t)thrown;
        });
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < n; t++)
        std::printf("thread %d: %016llx\n", t, (unsigned long long)out[t]);
    return 0;
}
