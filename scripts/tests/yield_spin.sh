# A thread looping on sched_yield while the thread it waits for is parked
# in poll on the same worker: after a 2 ms slice of yields with nothing
# else runnable, the worker polls its netpoller (src/hooks/signal.rs,
# sched::slice). 100 round trips; the same output natively, with
# interposition off, with one worker and with the default (it hung with
# one worker before: GLib's gio "contexts" test timed out so).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere yield_spin "$BIN/yield_spin"
ok "a sched_yield loop lets a thread parked on an fd of its worker run"
