"""A DNS server that answers slowly, for scripts/tests/dns_slow.sh.

Listens on UDP 127.0.0.1:53 (in the test's own network namespace) and
answers each A query for host-N.corun.test with 10.11.N/256.N%256 after
DELAY seconds (each answer on its own timer, so 64 queries at once take
one delay, not 64). Any other name gets NXDOMAIN, any other type an empty
answer, both after the same delay. Prints "ready" once bound. Stops after
LIFETIME seconds.
"""
import socket
import struct
import sys
import threading
import time

DELAY = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
LIFETIME = 120


def parse_name(msg, off):
    labels = []
    while msg[off] != 0:
        n = msg[off]
        labels.append(msg[off + 1:off + 1 + n].decode("ascii", "replace"))
        off += 1 + n
    return ".".join(labels), off + 1


def answer(query):
    qid, _flags, qd = struct.unpack(">HHH", query[:6])
    if qd != 1:
        return None
    name, end = parse_name(query, 12)
    qtype, _qclass = struct.unpack(">HH", query[end:end + 4])
    question = query[12:end + 4]
    host = name.lower()
    n = None
    if host.startswith("host-") and host.endswith(".corun.test"):
        try:
            n = int(host[5:-len(".corun.test")])
        except ValueError:
            n = None
    if n is None:
        # NXDOMAIN, recursion available.
        return struct.pack(">HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question
    if qtype != 1:
        return struct.pack(">HHHHHH", qid, 0x8180, 1, 0, 0, 0) + question
    rr = struct.pack(">HHHIH", 0xC00C, 1, 1, 60, 4) + bytes([10, 11, n // 256, n % 256])
    return struct.pack(">HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + rr


def main():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 53))
    print("ready", flush=True)
    s.settimeout(1.0)
    end = time.monotonic() + LIFETIME
    while time.monotonic() < end:
        try:
            query, peer = s.recvfrom(4096)
        except socket.timeout:
            continue
        reply = answer(query)
        if reply is not None:
            t = threading.Timer(DELAY, s.sendto, (reply, peer))
            t.daemon = True
            t.start()


main()
