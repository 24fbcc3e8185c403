# sigsetjmp(env, 1) and siglongjmp/longjmp outside handlers restore the
# thread's signal mask (c-tests/sigjmp_masks.c), a signal the jump unblocks
# is delivered by it, as natively, on 1 worker and the default. glibc saves
# the mask with an inline system call: it saved the worker's kernel mask,
# and the jump left the coroutine's mask as it was.
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/sigjmp_masks"
