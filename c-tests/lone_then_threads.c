/*
 * lone_then_threads: a process that makes its calls alone, then makes
 * threads, must park them again (src/sched/lone.rs answers "nothing parks"
 * only until the first spawn; a forked child starts alone again).
 *
 * In the process (then in a forked child of it, which had a thread before
 * the fork): main reads and writes a pipe alone, then starts a thread that
 * blocks in read() on a pipe main writes to only after the thread started
 * waiting. With one worker (CORUN_WORKERS=1), main's sleeps made as
 * natively would never let the thread run (reported), and a read made as
 * natively by the thread would hold the worker so that main never writes
 * (alarm(10) ends the run). Prints the same transcript natively and under corun.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int to_reader[2];
static volatile int reader_started;

static void *reader(void *arg)
{
    (void)arg;
    char buf[16] = {0};
    reader_started = 1;
    ssize_t n = read(to_reader[0], buf, sizeof buf - 1);
    return (void *)(n == 5 && memcmp(buf, "hello", 5) == 0 ? (void *)1 : NULL);
}

/* One round: alone first, then one thread that must park. 0 on success. */
static int round_in(const char *who)
{
    int p[2];
    char c = 0;
    if (pipe(p) || write(p[1], "x", 1) != 1 || read(p[0], &c, 1) != 1 || c != 'x')
        return 1;
    close(p[0]);
    close(p[1]);
    if (pipe(to_reader))
        return 1;
    reader_started = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, reader, NULL))
        return 1;
    /* Wait until the reader runs (it then blocks in its read); bounded. */
    for (int i = 0; i < 2000 && !reader_started; i++)
        usleep(1000);
    if (!reader_started) {
        /* main's sleeps held the only worker: they were not parked. */
        printf("%s: the thread never ran while main slept\n", who);
        return 1;
    }
    usleep(20000);
    if (write(to_reader[1], "hello", 5) != 5)
        return 1;
    void *ok = NULL;
    if (pthread_join(t, &ok) || ok != (void *)1)
        return 1;
    close(to_reader[0]);
    close(to_reader[1]);
    printf("%s: alone, then a thread that waited: ok\n", who);
    fflush(stdout);
    return 0;
}

int main(void)
{
    alarm(10);
    if (round_in("process"))
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        _exit(round_in("forked child"));
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("child failed: status %d\n", st);
        return 1;
    }
    return round_in("process again");
}
