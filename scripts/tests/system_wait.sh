# system(3) and pclose(3) wait parked (src/hooks/process/system.rs,
# popen.rs): glibc's wait with its internal waitpid, which held the worker
# (a ticker thread there stopped). Exit statuses, the shell's signal mask
# and ignored set, SIGINT ignored during the call, two threads in system
# at once, pclose of "w" and "r" streams: the same output natively and
# under corun (1 worker, default).
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/system_wait"
grep -q ": NO$" "$TMPD/native" && fail "natively (machine too loaded?): $(cat "$TMPD/native")"
ok "system and pclose wait parked, as natively"
