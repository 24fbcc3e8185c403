"""A SIGALRM handler that raises interrupts Python's main thread blocked in
socket.recv, socket.accept, select.select, time.sleep and Thread.join
(Python needs the blocked call to fail with EINTR to run its handler); with a handler that
returns, the call is retried (PEP 475) and gets its data. Prints one line
per case."""
import select
import signal
import socket
import threading
import time


class Alarm(Exception):
    pass


def raise_alarm(sig, frame):
    raise Alarm()


def trial(name, fn, expect=0.2):
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    t0 = time.monotonic()
    try:
        fn()
        res = "returned"
    except Alarm:
        res = "Alarm raised"
    dt = time.monotonic() - t0
    when = "in time" if expect - 0.02 < dt < expect + 0.4 else "NOT IN TIME (%.3fs)" % dt
    print("%s: %s, %s" % (name, res, when), flush=True)


signal.signal(signal.SIGALRM, raise_alarm)
a, b = socket.socketpair()
trial("socket.recv", lambda: a.recv(10))
trial("select.select", lambda: select.select([a], [], [], 5))
trial("time.sleep", lambda: time.sleep(5))
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
trial("socket.accept", listener.accept)

# Another thread waits on a lock meanwhile: the signal still goes to main.
ev = threading.Event()
t = threading.Thread(target=ev.wait)
t.start()
trial("socket.recv, another thread waiting", lambda: a.recv(10))
ev.set()
t.join()

# Main joins a thread that sleeps: the lock wait (sem_wait) is interrupted.
sleeper = threading.Thread(target=time.sleep, args=(1.0,))
sleeper.start()
trial("Thread.join", sleeper.join)
sleeper.join()

# A handler that returns: recv is retried and gets the data sent later.
handled = []
signal.signal(signal.SIGALRM, lambda s, f: handled.append(s))


def send_later():
    time.sleep(0.6)
    b.send(b"hello")


w = threading.Thread(target=send_later)
w.start()
signal.setitimer(signal.ITIMER_REAL, 0.2)
t0 = time.monotonic()
data = a.recv(10)
dt = time.monotonic() - t0
w.join()
print("socket.recv, handler returns: got %r after the handler ran %d time(s), %s"
      % (data, len(handled), "in time" if 0.55 < dt < 1.0 else "NOT IN TIME (%.3fs)" % dt))
