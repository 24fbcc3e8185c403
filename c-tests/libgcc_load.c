/*
 * libgcc_load - whether the process has libgcc_s.so.1 mapped, at the
 * points where glibc loads it natively: not at the start of a C program,
 * not after a thread that returned, and after a thread that called
 * pthread_exit (glibc opens libgcc_s to unwind it). Under corun the
 * output must be the same: a process that never ends a thread that way
 * does not pay for loading libgcc_s (its constructor's cpuid instructions
 * trap to the hypervisor on a virtual machine), and one that does gets the
 * same unwinder the program's own C++ code uses.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) {
        perror("/proc/self/maps");
        return -1;
    }
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "/libgcc_s.so"))
            found = 1;
    fclose(f);
    return found;
}

static void say(const char *when)
{
    printf("%s: libgcc_s %s\n", when, mapped() ? "mapped" : "not mapped");
}

static void *returns(void *arg) { return arg; }

static void *exits(void *arg)
{
    pthread_exit(arg);
    return NULL;
}

int main(void)
{
    say("at start");
    pthread_t t;
    void *r = NULL;
    if (pthread_create(&t, NULL, returns, (void *)1) || pthread_join(t, &r) || r != (void *)1) {
        printf("FAIL: the returning thread\n");
        return 1;
    }
    say("after a thread that returned");
    if (pthread_create(&t, NULL, exits, (void *)2) || pthread_join(t, &r) || r != (void *)2) {
        printf("FAIL: the exiting thread\n");
        return 1;
    }
    say("after a thread that called pthread_exit");
    return 0;
}
