/*
 * thread_names.c - thread names as the kernel keeps them: the main
 * thread's name is the process's (/proc/self/comm, what ps and pgrep
 * match), another thread's is its own.
 *
 * - a thread that names itself (pthread_setname_np, then prctl
 *   PR_SET_NAME) sees its name (pthread_getname_np, PR_GET_NAME) and
 *   leaves the process's name alone;
 * - main naming itself (pthread_setname_np, prctl) renames the process,
 *   and so does another thread naming main;
 * - a new thread starts with its creator's name; prctl cuts a name at 15
 *   bytes, pthread_setname_np refuses a longer one (ERANGE);
 * - a forked child's name is the forking thread's.
 *
 * Prints one line per fact; scripts/tests/thread_names.sh requires the
 * same lines natively and under corun.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void comm(const char *what, char *out, size_t len)
{
    char buf[64] = "?";
    FILE *f = fopen(what, "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            strcpy(buf, "?");
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    snprintf(out, len, "%s", buf);
}

static void show(const char *when)
{
    char proc[64], own[32] = "?", kern[32] = "?";
    comm("/proc/self/comm", proc, sizeof proc);
    pthread_getname_np(pthread_self(), own, sizeof own);
    prctl(PR_GET_NAME, kern);
    printf("%-36s process=%s own=%s prctl=%s\n", when, proc, own, kern);
}

/* The name a forked child has (its /proc/self/comm, read by the child). */
static void fork_and_show(const char *who)
{
    int p[2];
    if (pipe(p) != 0)
        return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char name[64];
        comm("/proc/self/comm", name, sizeof name);
        (void)!write(p[1], name, strlen(name));
        _exit(0);
    }
    close(p[1]);
    char name[64] = "";
    ssize_t n = read(p[0], name, sizeof name - 1);
    name[n > 0 ? n : 0] = 0;
    close(p[0]);
    waitpid(pid, NULL, 0);
    printf("child forked by %s: %s\n", who, name);
}

static void *self_namer(void *arg)
{
    (void)arg;
    show("thread at start");
    pthread_setname_np(pthread_self(), "t-setname");
    show("thread after pthread_setname_np");
    prctl(PR_SET_NAME, "t-prctl-a-very-long-name");
    show("thread after prctl");
    fork_and_show("the named thread");
    printf("thread pthread_setname_np of 16 bytes: %s\n",
           pthread_setname_np(pthread_self(), "0123456789abcdef") == ERANGE ? "ERANGE" : "other");
    return NULL;
}

static pthread_t main_thread;

static void *main_namer(void *arg)
{
    (void)arg;
    show("second thread at start");
    printf("naming main from a thread: %d\n", pthread_setname_np(main_thread, "by-other"));
    char n[32] = "?";
    pthread_getname_np(main_thread, n, sizeof n);
    printf("main's name read by a thread: %s\n", n);
    show("second thread after naming main");
    fork_and_show("an unnamed thread");
    return NULL;
}

int main(void)
{
    pthread_t t;
    main_thread = pthread_self();
    show("main at start");
    pthread_create(&t, NULL, self_namer, NULL);
    pthread_join(t, NULL);
    show("main after the thread named itself");
    pthread_setname_np(pthread_self(), "m-setname");
    show("main after pthread_setname_np");
    prctl(PR_SET_NAME, "m-prctl");
    show("main after prctl");
    fork_and_show("main");
    pthread_create(&t, NULL, main_namer, NULL);
    pthread_join(t, NULL);
    show("main at the end");
    return 0;
}
