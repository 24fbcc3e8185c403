# Python delivers a signal while its main thread is blocked: a SIGALRM
# handler that raises interrupts socket.recv, socket.accept, select.select,
# time.sleep and Thread.join (Python runs its handlers when the call fails
# with EINTR), also while another thread waits; a handler that returns lets
# recv retry (PEP 475) and get its data. Same output natively and under
# corun (1 worker, default).
source "$(dirname "$0")/../lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 0; }
same_output_native_and_corun python3 "$ROOT/scripts/tests/data/sig_python.py"
grep -q "NOT IN TIME" "$TMPD/native" && fail "natively (machine too loaded?): $(cat "$TMPD/native")"
true
