# A signal that lands while a SA_ONSTACK handler runs is handled, as
# natively, in a thread that never parks again (c-tests/
# sig_onstack_nested.c: CPython's test_signal stress test, which hung).
# Handlers with SA_ONSTACK run on the worker's alternate stack; a SIGALRM
# landing there was left pending for main, which as the only coroutine
# sleeps in nanosleep as natively and never looked again. 4000 rounds,
# with one worker and with the default.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=120 same_output_native_and_corun "$BIN/sig_onstack_nested"
