/*
 * sig_sent_segv: a SIGSEGV or SIGBUS that is sent (raise, kill), not
 * raised by a fault, acts as the disposition says, as natively.
 *
 * corun keeps its stack-overflow handler in the kernel for SIGSEGV and
 * SIGBUS while the program's disposition is SIG_DFL or SIG_IGN. For a real
 * fault it restores the disposition and returns, and the instruction
 * faults again; a sent signal is not sent again, so it was swallowed: the
 * process lived on. CPython's faulthandler (test_faulthandler) prints the
 * traceback in its handler, puts SIG_DFL back and raises the signal again
 * to die by it: under corun the script went on and exited 0.
 *
 * Each case runs in a child process; the parent prints how it ended.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* faulthandler's pattern: SA_NODEFER | SA_ONSTACK, report, back to
 * SIG_DFL, raise again. */
static void report_and_reraise(int sig)
{
    static const char msg[] = "handler ran\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(3);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

static void run(const char *what, int sig, int how)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        if (how == 2) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = report_and_reraise;
            sa.sa_flags = SA_NODEFER | SA_ONSTACK;
            sigaction(sig, &sa, NULL);
        } else if (how == 3) {
            signal(sig, SIG_IGN);
        }
        if (how == 1)
            kill(getpid(), sig);
        else
            raise(sig);
        printf("lived on\n");
        fflush(stdout);
        _exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid) {
        perror("waitpid");
        exit(2);
    }
    if (WIFSIGNALED(st))
        printf("%s: killed by signal %d\n", what, WTERMSIG(st));
    else
        printf("%s: exit %d\n", what, WEXITSTATUS(st));
}

int main(void)
{
    run("raise(SIGSEGV), SIG_DFL", SIGSEGV, 0);
    run("raise(SIGBUS), SIG_DFL", SIGBUS, 0);
    run("kill(self, SIGSEGV), SIG_DFL", SIGSEGV, 1);
    run("SIGSEGV handler puts SIG_DFL back and raises", SIGSEGV, 2);
    run("SIGBUS handler puts SIG_DFL back and raises", SIGBUS, 2);
    run("raise(SIGSEGV), SIG_IGN", SIGSEGV, 3);
    return 0;
}
