# A child forked inside a signal handler (sa_mask: everything) unblocks
# signals with sigprocmask and takes the SIGTERM its parent sends, as
# PostgreSQL 15's walwriter and autovacuum launcher must at a fast
# shutdown (they are forked from the postmaster's SIGCHLD handler):
# c-tests/fork_in_handler.c, same output natively and under corun, the
# child's SIGTERM handler ran and it exited 0.
source "$(dirname "$0")/../lib.sh"
same_transcript fork_in_handler
grep -q '^child: SIGTERM handled: 1$' "$TMPD/fork_in_handler.corun" || fail "the child did not handle SIGTERM"
ok "fork in a handler: the child unblocks and gets SIGTERM, natively and under corun"
