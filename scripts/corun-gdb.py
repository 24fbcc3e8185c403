# corun-gdb.py: gdb commands for programs run under corun, in a live
# process (gdb -p PID) or a core file (gdb PROGRAM CORE).
#
#   source /usr/local/share/corun/corun-gdb.py     (or gdb -x ...)
#   corun list        every coroutine: id, state, name or start, wait
#   corun bt ID       coroutine ID's backtrace (frame, info locals... work
#                     on its frames afterwards)
#   corun reset       back to the threads' own frames
#
# How: libcorun.so exports `corun_debug`, a registry of every live
# coroutine in a C layout with a version number (src/sched/debugreg.rs
# documents layout 1); nothing here reads Rust's own structures. A parked
# coroutine's frames are on its own stack: each coroutine saved its pc, sp
# and rbp there when it suspended. `corun bt` installs an unwinder that
# makes those registers the caller of the selected thread's innermost
# frame, so gdb's own DWARF unwinder walks the coroutine's stack from
# there; the inferior is never written to (no register is set), which is
# why this works on a core file and cannot harm a live process.

import re
import struct

import gdb
import gdb.unwinder

LAYOUT = 1
MAGIC = b"CORUNDBG"
# Record fields, 8 bytes each (debugreg.rs).
FIELDS = ("next prev id state_addr pc sp fp stack_lo stack_hi start "
          "cause_addr object_addr").split()
STATES = {0: "new", 1: "runnable", 2: "running", 3: "parked", 4: "woken",
          5: "done"}
# waitdesc::Cause, in order.
CAUSES = ["", "fd read", "fd write", "poll", "timer", "mutex", "cond",
          "rwlock", "semaphore", "barrier", "once", "futex", "join",
          "blocking pool", "channel", "signal", "other"]
MAX_RECORDS = 1 << 22


def _mem(addr, n):
    return bytes(gdb.selected_inferior().read_memory(addr, n))


def _u64(addr):
    return struct.unpack("<Q", _mem(addr, 8))[0]


def _root():
    # `info address` answers whatever the current language (a selected
    # Rust frame makes C casts fail to parse).
    try:
        s = gdb.execute("info address corun_debug", to_string=True)
        addr = int(re.search(r" is at (0x[0-9a-f]+)", s).group(1), 16)
    except (gdb.error, AttributeError):
        raise gdb.GdbError("corun: no corun_debug symbol: is this process "
                           "running under corun (libcorun.so loaded)?")
    magic, version, size, lists = struct.unpack("<8sIIQ", _mem(addr, 24))
    if magic != MAGIC:
        raise gdb.GdbError("corun: corun_debug at %#x has no magic" % addr)
    if version != LAYOUT:
        raise gdb.GdbError("corun: registry layout %d, this script reads %d"
                           % (version, LAYOUT))
    heads = struct.unpack("<%dQ" % lists, _mem(addr + 24, 8 * lists))
    return size, heads


def records():
    """Every coroutine's record, as a dict, sorted by id."""
    size, heads = _root()
    out, seen = [], set()
    for head in heads:
        p = head
        while p and p not in seen and len(seen) < MAX_RECORDS:
            seen.add(p)
            raw = _mem(p, size)
            r = dict(zip(FIELDS, struct.unpack_from("<12Q", raw)))
            r["name"] = raw[96:112].split(b"\0")[0].decode("utf-8", "replace")
            r["state"] = STATES.get(_u64(r["state_addr"]) & 7, "?") \
                if r["state_addr"] else "?"
            if r["cause_addr"]:
                cause = _mem(r["cause_addr"], 1)[0]
                r["cause"] = CAUSES[cause] if cause < len(CAUSES) else "?"
                r["object"] = _u64(r["object_addr"])
            else:
                r["cause"], r["object"] = "", 0
            out.append(r)
            p = r["next"]
    return sorted(out, key=lambda r: r["id"])


_SYMBOLS = {}


def _symbol(addr):
    """The function at `addr` (one `info symbol` per address: thousands of
    coroutines share a few start routines)."""
    if addr not in _SYMBOLS:
        _SYMBOLS[addr] = _lookup_symbol(addr)
    return _SYMBOLS[addr]


def _lookup_symbol(addr):
    if not addr:
        return "?"
    try:
        s = gdb.execute("info symbol %#x" % addr, to_string=True)
    except gdb.error:
        return "%#x" % addr
    if s.startswith("No symbol"):
        return "%#x" % addr
    return s.split(" in section ")[0].split(" + ")[0].strip()


def _start(r):
    """The start routine's name; main's coroutine has none of its own."""
    if r["start"] == 0 and r["id"] == 1:
        return "main"
    return _symbol(r["start"])


def _wait(r):
    c, o = r["cause"], r["object"]
    if r["state"] != "parked" or not c:
        return ""
    if c in ("fd read", "fd write"):
        return "fd %d (%s)" % (o, c[3:])
    if c == "poll":
        return "poll of fd %d and others" % o
    if c == "join":
        return "join of coroutine %d" % o if o else "join of every thread"
    if c in ("mutex", "cond", "rwlock", "semaphore", "barrier", "once",
             "futex"):
        return "%s %#x" % (c, o)
    return c


class _FrameId:
    """A frame's identity for gdb: its stack address and code address
    (gdb 13 wants an object with these attributes; gdb 14 has a class)."""

    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class CorunUnwinder(gdb.unwinder.Unwinder):
    """Makes a coroutine's saved registers the caller of the innermost
    frame of one thread, while a `corun bt` is in force."""

    def __init__(self):
        super().__init__("corun")
        self.target = None  # (thread global num, pc, sp, fp)

    def __call__(self, pending):
        t = self.target
        if t is None or pending.level() != 0:
            return None
        th = gdb.selected_thread()
        if th is None or th.global_num != t[0]:
            return None
        _, pc, sp, fp = t
        ptr = gdb.lookup_type("unsigned long")
        # An id below the coroutine's frames: gdb wants each caller's
        # frame above its callee's.
        info = pending.create_unwind_info(
            _FrameId(gdb.Value(sp - 16).cast(ptr), gdb.Value(pc).cast(ptr)))
        info.add_saved_register("rip", gdb.Value(pc).cast(ptr))
        info.add_saved_register("rsp", gdb.Value(sp).cast(ptr))
        info.add_saved_register("rbp", gdb.Value(fp).cast(ptr))
        return info


UNWINDER = CorunUnwinder()
gdb.unwinder.register_unwinder(None, UNWINDER, replace=True)


class Corun(gdb.Command):
    """Coroutines of a program run under corun.
corun list      every coroutine: id, state, name or start routine, wait
corun bt ID     the backtrace of coroutine ID (its frames stay selectable)
corun reset     back to the threads' own frames"""

    def __init__(self):
        super().__init__("corun", gdb.COMMAND_STACK, prefix=True)

    def invoke(self, arg, from_tty):
        gdb.execute("help corun")


class CorunList(gdb.Command):
    """Lists every coroutine: id, state, name (or start routine), wait."""

    def __init__(self):
        super().__init__("corun list", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        _SYMBOLS.clear()  # another process, or libraries loaded since
        rs = records()
        print("%d coroutines" % len(rs))
        for r in rs:
            start = _start(r)
            who = '"%s" (%s)' % (r["name"], start) if r["name"] else start
            line = "%6d  %-9s %s" % (r["id"], r["state"], who)
            w = _wait(r)
            if w:
                line += "  waits on " + w
            print(line)


class CorunBt(gdb.Command):
    """corun bt ID: the backtrace of coroutine ID, from where it suspended."""

    def __init__(self):
        super().__init__("corun bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        try:
            want = int(arg.split()[0])
        except (IndexError, ValueError):
            raise gdb.GdbError("usage: corun bt ID (ids: corun list)")
        r = next((r for r in records() if r["id"] == want), None)
        if r is None:
            raise gdb.GdbError("corun: no coroutine %d" % want)
        if r["state"] == "running":
            raise gdb.GdbError("corun: coroutine %d is running: its frames "
                               "are those of its worker thread (bt there)"
                               % want)
        if not (r["pc"] and r["stack_lo"] <= r["sp"] < r["stack_hi"]):
            raise gdb.GdbError("corun: coroutine %d never suspended" % want)
        th = gdb.selected_thread()
        if th is None:
            raise gdb.GdbError("corun: no thread selected")
        UNWINDER.target = (th.global_num, r["pc"], r["sp"], r["fp"])
        gdb.invalidate_cached_frames()
        print("coroutine %d (%s), %s:" % (want, r["name"] or _start(r),
                                          r["state"]))
        frame = gdb.newest_frame().older()
        n = 0
        while frame is not None and frame.pc() != 0 and n < 256:
            sal = frame.find_sal()
            where = ""
            if sal.symtab is not None:
                where = " at %s:%d" % (sal.symtab.filename, sal.line)
            else:
                lib = gdb.solib_name(frame.pc())
                if lib:
                    where = " from " + lib
            print("#%-3d %#018x in %s%s" % (n, frame.pc(),
                                          frame.name() or "??", where))
            if frame.name() == "stack_init_trampoline":
                break  # the coroutine's first frame (corosensei's)
            frame = frame.older()
            n += 1
        if n:
            # `frame N` and `info locals` now see the coroutine's frames
            # (1 is its innermost: 0 stays the thread's own).
            gdb.newest_frame().older().select()


class CorunReset(gdb.Command):
    """Stops showing a coroutine's frames: the threads' own again."""

    def __init__(self):
        super().__init__("corun reset", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        UNWINDER.target = None
        gdb.invalidate_cached_frames()


Corun()
CorunList()
CorunBt()
CorunReset()
