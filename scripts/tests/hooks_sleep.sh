# sleep/usleep/nanosleep/clock_nanosleep: the transcript of
# c-tests/hooks_sleep.c under corun (one worker, every sleep parked) is the
# native one.
source "$(dirname "$0")/../lib.sh"
same_transcript hooks_sleep
ok "hooks_sleep: $(wc -l <"$TMPD/hooks_sleep.native") lines, same transcript natively and under corun"
