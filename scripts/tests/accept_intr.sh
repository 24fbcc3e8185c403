# A signal for a thread blocked in accept on a listener another process
# shares (src/sched/pool_kick.rs, src/hooks/listener.rs). corun makes that
# accept on the blocking pool; natively a signal ends it with EINTR (a
# handler without SA_RESTART), restarts it (SA_RESTART) or kills the
# process (SIGTERM at default). c-tests/accept_intr.c blocks there the way
# accept_shared.sh arranges it: strace holds corun's readiness check
# (poll) 200 ms on its way back while this script takes the connection
# the program saw pending. Then the program signals its accepting thread:
# EINTR must come within 100 ms; with SA_RESTART the handler must run at
# once and the accept go on to return the next connection, whose bytes
# are checked; SIGTERM must end the process within 1 s; SIGRTMAX, which
# corun sends its helper thread, must still look unset to the program and
# end it when the program sends it. With the accept
# holding signals off until it returned, the first two failed (timed out).
source "$(dirname "$0")/../lib.sh"
command -v strace >/dev/null || { echo "SKIP: no strace"; exit 0; }

run() { # mode, LD_PRELOAD value (empty: natively)
    timeout 30 python3 - "$BIN/accept_intr" "$1" "$2" <<'PY'
import os, select, signal, socket, subprocess, sys, time
prog, mode, lib = sys.argv[1:4]
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
env = dict(os.environ, LD_PRELOAD=lib)
cmd = ["strace", "-f", "-qq", "--seccomp-bpf", "-o", "/dev/null", "-e", "trace=poll",
       "-e", "inject=poll:delay_exit=200000", prog, str(ls.fileno()), mode]
p = subprocess.Popen(cmd, pass_fds=[ls.fileno()], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, env=env, text=True)
def line():
    r, _, _ = select.select([p.stdout], [], [], 10)
    if not r:
        print("no answer from the program"); p.kill(); sys.exit(1)
    return p.stdout.readline().strip()
first = line()
if not first.startswith("ready"):
    print("unexpected:", first); p.kill(); sys.exit(1)
pid = int(first.split()[1])
time.sleep(0.3)
# Natively the accept waits in the kernel already (no readiness check to
# race with): nothing to set up.
taken = lib == ""
for attempt in range(0 if taken else 5):
    c = socket.create_connection(ls.getsockname())
    time.sleep(0.05)
    # Never O_NONBLOCK: that flag is on the description the program shares.
    if select.select([ls], [], [], 0)[0]:
        a, _ = ls.accept(); a.close(); taken = True
    c.close()
    if taken:
        break
    line()  # "conn": the program got it; try again
    time.sleep(0.3)
if not taken:
    print("the race was never set up"); p.kill(); sys.exit(1)
# The held check returns 200 ms later; then the program waits in accept.
time.sleep(0.5)
p.stdin.write("kill\n"); p.stdin.flush()
if mode == "term":
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        print("still running 5 s after SIGTERM"); p.kill(); sys.exit(1)
    ms = (time.monotonic() - t0) * 1000
    print("SIGTERM at default: gone after %.0f ms" % ms)
    sys.exit(0 if ms < 1000 else 1)
if mode == "restart":
    out = line()
    print(out)
    if not out.startswith("handled"):
        p.kill(); sys.exit(1)
    c = socket.create_connection(ls.getsockname())
    c.sendall(b"bytes after the restart")
    c.close()
out = line()
print(out)
if mode == "rtmax":
    print(line())
try:
    rc = p.wait(timeout=5)
except subprocess.TimeoutExpired:
    p.kill(); rc = 1
if mode == "rtmax":
    # strace ends as its tracee did: killed by SIGRTMAX (64).
    print("ended by signal %d" % -rc)
    sys.exit(0 if rc == -64 else 1)
sys.exit(rc)
PY
}
for mode in eintr restart term rtmax; do
    out=$(run $mode "") || fail "natively, $mode: $out"
    ok "natively, $mode: $out"
    out=$(run $mode "$LIB") || fail "under corun, $mode: $out"
    ok "under corun, $mode: $out"
done
