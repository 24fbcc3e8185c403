// A malloc with per-thread state set up at a thread's first call, the way
// jemalloc's is (redis-server links it): the first malloc in a thread
// marks its state "initialising", calls pthread_setspecific (jemalloc
// registers its cleanup that way) and only then makes the state ready.
// A malloc that arrives while its own thread is initialising is the
// re-entry that crashed redis under corun (jemalloc read a NULL tcache
// bin); natively neither pthread_setspecific (for a low key) nor a
// contended pthread_mutex_lock allocates.
// Also checks that the value set there survives: its destructor runs
// once per thread at the thread's exit.
//
// Prints the same lines natively and under corun; exits 1 on a failure.
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define THREADS 64
#define ARENA (512UL << 20)

// ---- a bump allocator with a size header; free keeps nothing ----
static char *arena;
static _Atomic size_t used;

static void *bump(size_t size, size_t align) {
    if (align < 16)
        align = 16;
    if (!arena) {
        // Several threads may race here only before main: ld.so and libc
        // call malloc on the main thread first.
        void *p = mmap(NULL, ARENA, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            abort();
        arena = p;
    }
    size_t need = size + align + 16;
    size_t at = atomic_fetch_add(&used, (need + 15) & ~(size_t)15);
    if (at + need > ARENA)
        return NULL;
    uintptr_t base = (uintptr_t)arena + at + 16;
    uintptr_t p = (base + align - 1) & ~(uintptr_t)(align - 1);
    ((size_t *)p)[-1] = size;
    return (void *)p;
}

// ---- per-thread state, jemalloc style ----
static pthread_key_t key;
static _Atomic int key_ready;
static __thread int state; // 0 new, 1 initialising, 2 ready
static _Atomic int reentered, dtors, slow_setups;
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

static void dtor(void *v) {
    (void)v;
    atomic_fetch_add(&dtors, 1);
}

static void thread_state(void) {
    if (state == 2 || !atomic_load(&key_ready))
        return;
    if (state == 1) {
        atomic_store(&reentered, 1);
        return;
    }
    state = 1;
    pthread_setspecific(key, (void *)&state);
    // jemalloc takes its arena locks here: contended, they park the
    // thread under corun. The first few hold it a while to make sure.
    pthread_mutex_lock(&setup_lock);
    if (atomic_fetch_add(&slow_setups, 1) < 8)
        usleep(2000);
    pthread_mutex_unlock(&setup_lock);
    state = 2;
}

void *malloc(size_t size) {
    thread_state();
    return bump(size, 16);
}

void free(void *p) { (void)p; }

void *calloc(size_t n, size_t size) {
    thread_state();
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = bump(n * size, 16);
    if (p)
        memset(p, 0, n * size); // fresh mappings are zero; be plain
    return p;
}

void *realloc(void *old, size_t size) {
    thread_state();
    void *p = bump(size, 16);
    if (p && old) {
        size_t was = ((size_t *)old)[-1];
        memcpy(p, old, was < size ? was : size);
    }
    return p;
}

int posix_memalign(void **out, size_t align, size_t size) {
    thread_state();
    void *p = bump(size, align);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t size) {
    thread_state();
    return bump(size, align);
}

void *memalign(size_t align, size_t size) {
    thread_state();
    return bump(size, align);
}

size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-1] : 0; }

// ---- the program ----
static void *run(void *arg) {
    char *p = malloc(100); // whatever ran before, this thread is set up now
    snprintf(p, 100, "thread %ld", (long)(intptr_t)arg);
    usleep(1000);
    void *mine = pthread_getspecific(key);
    free(p);
    return mine == (void *)&state ? (void *)1 : NULL;
}

int main(void) {
    if (pthread_key_create(&key, dtor) != 0)
        return 2;
    atomic_store(&key_ready, 1);
    int bad = 0;
    for (int round = 0; round < 4; round++) {
        pthread_t t[THREADS];
        for (long i = 0; i < THREADS; i++)
            if (pthread_create(&t[i], NULL, run, (void *)i) != 0)
                return 2;
        for (int i = 0; i < THREADS; i++) {
            void *r;
            pthread_join(t[i], &r);
            bad += r != (void *)1;
        }
    }
    int n = THREADS * 4;
    printf("malloc_thread_init: %d threads\n", n);
    printf("malloc re-entered during a thread's malloc setup: %s\n",
           atomic_load(&reentered) ? "yes" : "no");
    printf("value set in setup seen by the thread: %d of %d\n", n - bad, n);
    printf("destructors run: %d of %d\n", atomic_load(&dtors), n);
    int ok = !atomic_load(&reentered) && bad == 0 && atomic_load(&dtors) == n;
    printf("malloc_thread_init: %s\n", ok ? "all checks passed" : "FAILED");
    return ok ? 0 : 1;
}
