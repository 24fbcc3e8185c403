# A python3 program using threads, sockets and a ThreadPoolExecutor: an
# echo server thread, client threads, and a pool computing checksums.
import hashlib, socket, threading
from concurrent.futures import ThreadPoolExecutor

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
port = srv.getsockname()[1]

def serve():
    for _ in range(16):
        c, _ = srv.accept()
        threading.Thread(target=echo, args=(c,)).start()

def echo(c):
    with c:
        while True:
            d = c.recv(65536)
            if not d:
                return
            c.sendall(d)

def client(i):
    data = hashlib.sha256(str(i).encode()).digest() * (1000 + i * 37)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    return hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest(), len(got)

t = threading.Thread(target=serve)
t.start()
with ThreadPoolExecutor(max_workers=8) as ex:
    results = list(ex.map(client, range(16)))
t.join()
lock = threading.Lock()
count = [0]
def bump():
    for _ in range(10000):
        with lock:
            count[0] += 1
ts = [threading.Thread(target=bump) for _ in range(8)]
[x.start() for x in ts]
[x.join() for x in ts]
print("echo ok:", all(ok for ok, _ in results), "bytes:", sum(n for _, n in results))
print("counter:", count[0])
