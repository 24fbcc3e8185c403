#!/usr/bin/env bash
# Runs every test in scripts/tests/ (or those whose name contains $1), each
# bounded in time, and prints one line per test and a summary.
set -uo pipefail
cd "$(dirname "$0")/.."
filter="${1:-}"
logdir="target/test-logs"
mkdir -p "$logdir"
pass=0; skip=0; fail=0; failed=()
for t in scripts/tests/*.sh; do
    name="$(basename "$t" .sh)"
    [[ -n "$filter" && "$name" != *"$filter"* ]] && continue
    start=$(date +%s%N)
    timeout -k 5 "${TEST_TIMEOUT:-240}" bash "$t" >"$logdir/$name.log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 )); secs="$((ms / 1000)).$(( (ms % 1000) / 100 ))"
    if [ $rc -eq 0 ] && grep -q '^SKIP: ' "$logdir/$name.log"; then
        # A test that could not run here says why on a line "SKIP: ...".
        skip=$((skip+1)); printf 'SKIP  %-32s %6ss  %s\n' "$name" "$secs" "$(grep -m1 '^SKIP: ' "$logdir/$name.log" | cut -c7-)"
    elif [ $rc -eq 0 ]; then
        pass=$((pass+1)); printf 'PASS  %-32s %6ss\n' "$name" "$secs"
    else
        fail=$((fail+1)); failed+=("$name")
        printf 'FAIL  %-32s %6ss (exit %d)\n' "$name" "$secs" "$rc"
        # The reason first: a CI log shown in part keeps its head.
        grep '^FAIL: ' "$logdir/$name.log" | sed 's/^/      ! /' | head -3
        sed 's/^/      | /' "$logdir/$name.log" | tail -25
    fi
done
skipped=""; [ $skip -gt 0 ] && skipped="$skip skipped, "
echo "tests: $pass passed, $skipped$fail failed${failed:+ (${failed[*]})}"
[ $fail -eq 0 ]
