// A threaded Java program for corun's tests: a fixed pool running 1,000
// tasks that sleep, a latch, 8 threads merging into a ConcurrentHashMap,
// synchronized blocks with wait/notify, and ThreadLocal values. Prints
// exact totals, the same natively and under corun.
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

public class Threads {
    static final ThreadLocal<Integer> MINE = ThreadLocal.withInitial(() -> -1);

    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(16);
        AtomicLong sum = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1000);
        for (int i = 0; i < 1000; i++) {
            final int k = i;
            pool.submit(() -> {
                sum.addAndGet(k);
                try { Thread.sleep(1); } catch (InterruptedException e) { }
                done.countDown();
            });
        }
        done.await();
        pool.shutdown();
        System.out.println("pool: terminated " + pool.awaitTermination(30, TimeUnit.SECONDS) + ", sum " + sum.get());

        ConcurrentHashMap<Integer, Integer> m = new ConcurrentHashMap<>();
        Thread[] ts = new Thread[8];
        AtomicInteger ownSeen = new AtomicInteger();
        for (int t = 0; t < ts.length; t++) {
            final int id = t;
            ts[t] = new Thread(() -> {
                MINE.set(id);
                for (int i = 0; i < 10000; i++) m.merge(i % 100, 1, Integer::sum);
                if (MINE.get() == id) ownSeen.incrementAndGet();
            });
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        int total = m.values().stream().mapToInt(x -> x).sum();
        System.out.println("map: " + m.size() + " keys, total " + total + ", threads that kept their ThreadLocal " + ownSeen.get());

        final Object lock = new Object();
        final int[] turn = {0};
        Thread[] ring = new Thread[4];
        for (int t = 0; t < ring.length; t++) {
            final int id = t;
            ring[t] = new Thread(() -> {
                for (int round = 0; round < 200; round++) {
                    synchronized (lock) {
                        while (turn[0] % ring.length != id) {
                            try { lock.wait(); } catch (InterruptedException e) { return; }
                        }
                        turn[0]++;
                        lock.notifyAll();
                    }
                }
            });
            ring[t].start();
        }
        for (Thread t : ring) t.join();
        System.out.println("wait/notify ring: " + turn[0] + " turns");
    }
}
