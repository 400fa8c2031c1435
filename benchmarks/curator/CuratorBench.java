// The Curator side of `zkr bench --peers curator`: Apache Curator's own
// recipes (Debian's 5.4 jars), InterProcessMutex, InterProcessReadWriteLock,
// InterProcessSemaphoreV2 and InterProcessSemaphoreMutex, driven by
// benchmarks/curator_peer.cpp, which compiles this file with javac and runs it
// in slices interleaved with the floor and zkrecipes, so that all three see
// the same machine.
//
//   java -cp <curator jars>:<dir of this class> CuratorBench <connect string> <sessions>
//
// One command per line on stdin, one reply per line on stdout:
//   w1 <lock path> <ms>
//       -> done <cycles> <latency us>...: acquire+release on one session for ms
//   w2 <lock path> <workers> <ms> <interval file>
//       -> done <acquisitions> <counter> <wait us>...: <workers> threads, each on
//          its own session, acquire, read-modify-write an in-process counter
//          (read, yield, write + 1), release, for ms; every hold is written to
//          the interval file in the format of testkit/checker/exclusion_checker.hpp
//          (pid thread enter_ns exit_ns token kind; CLOCK_MONOTONIC, as
//          System.nanoTime is on Linux; the token is the node's sequence number)
//   w3 <root> <keys> <threads> <ms>
//       -> done <cycles> <latency us>...: <threads> threads over the sessions
//          each take the next of <keys> distinct keys (<root>/k<i>), acquire
//          and release it once, until every key is done or ms have passed
//   w5 <lock path> <waiters> <handoffs> <ms>
//       -> done <handoffs> <ns> <latency us>...: a holder takes the lock; N + 2
//          contenders (threads over the sessions) queue behind it; then the
//          holder releases and hand-offs are timed, from just before a release
//          to the next holder's acquire returning, with N waiting behind the
//          receiver (whoever releases queues again), until <handoffs> or ms
//   w6 <lock path> <workers> <write every> <ms> <interval file>
//       -> done <reads> <writes> <counter> <read wait us>... <write wait us>...:
//          as w2 on an InterProcessReadWriteLock, every <write every>th hold of
//          each worker on the write lock (the read-modify-write), the others on
//          the read lock (two reads of the counter); holds of kind "read" and
//          "write" (the lock nodes share one sequence: the token)
//   w7-semaphore <path> <workers> <leases> <reads> <ms> <interval file>
//       -> done <acquisitions> <wait us>...: <workers> threads, each on its own
//          session, take one lease of an InterProcessSemaphoreV2 of <leases>,
//          do <reads> exists() of <path> (the holder's work), return it, for ms;
//          holds of kind "semaphore", token 0 (a lease has none)
//   w7-mutex <lock path> <workers> <ms> <interval file>
//       -> done <acquisitions> <wait us>...: the same on an
//          InterProcessSemaphoreMutex, a yield while held; kind "mutex", token 0
//   w9-close <latch path> <participants> <rounds> <ms>
//   w9-victim <connect> <latch path> <session ms> <participants>
//   w9-standby-wait <ms>
//   w9-victim-close
//       -> LeaderLatch failover (CuratorFailover.java, compiled with this file)
//   w10-counter <path> <workers> <adds per worker> <retries> <ms>
//       -> DistributedAtomicLong adds (CuratorCounter.java, compiled with this file)
//   w10-cache-start <group path>
//   w10-cache-run <changes> <members>
//   w10-cache-check
//       -> CuratorCache convergence (CuratorCacheRound.java, compiled with this file)
//   quit -> bye
// Anything that goes wrong -> error <message>. "ready" once every session is up.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorBench {
  private static final int CONNECT_WAIT_S = 30;
  private static final long ACQUIRE_TIMEOUT_MS = 30_000;  // as the C++ workers'

  // InterProcessMutex unchanged; its lock path made visible for the token.
  private static final class Mutex extends InterProcessMutex {
    Mutex(CuratorFramework client, String path) {
      super(client, path);
    }

    long sequence() {
      return sequenceOf(getLockPath());
    }
  }

  // The sequence number ZooKeeper appended to a lock node's name.
  private static long sequenceOf(String lockPath) {
    return Long.parseLong(lockPath.substring(lockPath.length() - 10));
  }

  // InterProcessReadWriteLock unchanged, built from its two sides as its
  // public constructor builds them; the sides only made to show their lock
  // paths. Read and write nodes share the directory, so one sequence orders them.
  private static final class ReadWriteLock extends InterProcessReadWriteLock {
    final Write write;
    final Read read;

    private ReadWriteLock(Write write, Read read) {
      super(write, read);
      this.write = write;
      this.read = read;
    }

    static ReadWriteLock create(CuratorFramework client, String path) {
      Write write = new Write(client, path);
      return new ReadWriteLock(write, new Read(client, path, write));
    }
  }

  private static final class Write extends InterProcessReadWriteLock.WriteLock {
    Write(CuratorFramework client, String path) {
      super(client, path, null);
    }

    long sequence() {
      return sequenceOf(getLockPath());
    }
  }

  private static final class Read extends InterProcessReadWriteLock.ReadLock {
    Read(CuratorFramework client, String path, Write write) {
      super(client, path, null, write);
    }

    long sequence() {
      return sequenceOf(getLockPath());
    }
  }

  private final List<CuratorFramework> sessions;
  private final PrintStream out;

  private CuratorBench(List<CuratorFramework> sessions, PrintStream out) {
    this.sessions = sessions;
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: CuratorBench <connect string> <sessions>");
      System.exit(2);
    }
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    System.setOut(System.err);  // the protocol owns stdout
    List<CuratorFramework> sessions = new ArrayList<>();
    try {
      for (int i = 0; i < Integer.parseInt(args[1]); i++) {
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(args[0])
            .sessionTimeoutMs(15_000)
            .connectionTimeoutMs(15_000)
            .retryPolicy(new ExponentialBackoffRetry(50, 10, 1000))
            .build();
        client.start();
        sessions.add(client);
        if (!client.blockUntilConnected(CONNECT_WAIT_S, TimeUnit.SECONDS)) {
          out.println("error not connected within " + CONNECT_WAIT_S + " s");
          return;
        }
      }
      out.println("ready");
      new CuratorBench(sessions, out).serve();
    } finally {
      for (CuratorFramework client : sessions) client.close();
    }
  }

  private void serve() throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      String[] w = line.trim().split(" ");
      try {
        if (w[0].equals("quit")) {
          out.println("bye");
          return;
        } else if (w[0].equals("w1") && w.length == 3) {
          out.println(w1(w[1], Long.parseLong(w[2])));
        } else if (w[0].equals("w5") && w.length == 5) {
          out.println(w5(w[1], Integer.parseInt(w[2]), Long.parseLong(w[3]), Long.parseLong(w[4])));
        } else if (w[0].equals("w3") && w.length == 5) {
          out.println(w3(w[1], Long.parseLong(w[2]), Integer.parseInt(w[3]), Long.parseLong(w[4])));
        } else if (w[0].equals("w2") && w.length == 5) {
          out.println(w2(w[1], Integer.parseInt(w[2]), Long.parseLong(w[3]), w[4]));
        } else if (w[0].equals("w6") && w.length == 6) {
          out.println(w6(w[1], Integer.parseInt(w[2]), Integer.parseInt(w[3]), Long.parseLong(w[4]), w[5]));
        } else if (w[0].equals("w7-semaphore") && w.length == 7) {
          out.println(w7Semaphore(w[1], Integer.parseInt(w[2]), Integer.parseInt(w[3]), Integer.parseInt(w[4]),
              Long.parseLong(w[5]), w[6]));
        } else if (w[0].equals("w7-mutex") && w.length == 5) {
          out.println(w7Mutex(w[1], Integer.parseInt(w[2]), Long.parseLong(w[3]), w[4]));
        } else if (w[0].equals("w9-close") && w.length == 5) {
          out.println(CuratorFailover.close(sessions, w[1], Integer.parseInt(w[2]), Long.parseLong(w[3]),
              Long.parseLong(w[4])));
        } else if (w[0].equals("w9-victim") && w.length == 5) {
          out.println(CuratorFailover.victim(sessions, w[1], w[2], Integer.parseInt(w[3]), Integer.parseInt(w[4])));
        } else if (w[0].equals("w9-standby-wait") && w.length == 2) {
          out.println(CuratorFailover.standbyWait(Long.parseLong(w[1])));
        } else if (w[0].equals("w9-victim-close") && w.length == 1) {
          out.println(CuratorFailover.victimClose());
        } else if (w[0].equals("w10-counter") && w.length == 6) {
          out.println(CuratorCounter.adds(sessions, w[1], Integer.parseInt(w[2]), Long.parseLong(w[3]),
              Integer.parseInt(w[4]), Long.parseLong(w[5])));
        } else if (w[0].equals("w10-cache-start") && w.length == 2) {
          out.println(CuratorCacheRound.start(sessions, w[1]));
        } else if (w[0].equals("w10-cache-run") && w.length == 3) {
          out.println(CuratorCacheRound.run(sessions, Integer.parseInt(w[1]), Integer.parseInt(w[2])));
        } else if (w[0].equals("w10-cache-check") && w.length == 1) {
          out.println(CuratorCacheRound.check(sessions));
        } else {
          out.println("error unknown command: " + line);
        }
      } catch (Exception e) {
        e.printStackTrace();
        out.println("error " + e.toString().replace('\n', ' '));
      }
    }
  }

  private String w1(String path, long ms) throws Exception {
    Mutex mutex = new Mutex(sessions.get(0), path);
    StringBuilder reply = new StringBuilder();
    long deadline = System.nanoTime() + ms * 1_000_000;
    long cycles = 0;
    for (; cycles < 10_000_000; cycles++) {
      long t0 = System.nanoTime();
      if (t0 >= deadline) break;
      if (!mutex.acquire(ACQUIRE_TIMEOUT_MS, TimeUnit.MILLISECONDS)) return "error acquire timed out";
      mutex.release();
      reply.append(' ').append((System.nanoTime() - t0) / 1000);
    }
    return "done " + cycles + reply;
  }

  private String w3(String root, long keys, int threads, long ms) throws Exception {
    AtomicLong next = new AtomicLong();
    long deadline = System.nanoTime() + ms * 1_000_000;
    List<Worker> results = new ArrayList<>();
    List<Thread> running = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Worker worker = new Worker();
      CuratorFramework session = sessions.get(t % sessions.size());
      results.add(worker);
      running.add(new Thread(() -> {
        try {
          for (long i = next.getAndIncrement(); i < keys && System.nanoTime() < deadline; i = next.getAndIncrement()) {
            long t0 = System.nanoTime();
            InterProcessMutex mutex = new InterProcessMutex(session, root + "/k" + i);
            if (!mutex.acquire(ACQUIRE_TIMEOUT_MS, TimeUnit.MILLISECONDS)) throw new Exception("acquire timed out");
            mutex.release();
            worker.waits.add((System.nanoTime() - t0) / 1000);
          }
        } catch (Exception e) {
          worker.error = e;
        }
      }));
    }
    for (Thread t : running) t.start();
    for (Thread t : running) t.join();
    long cycles = 0;
    StringBuilder latencies = new StringBuilder();
    for (Worker worker : results) {
      if (worker.error != null) return "error " + worker.error;
      cycles += worker.waits.size();
      for (long us : worker.waits) latencies.append(' ').append(us);
    }
    return "done " + cycles + latencies;
  }

  private String w5(String path, int waiters, long target, long ms) throws Exception {
    Mutex holder = new Mutex(sessions.get(0), path);
    if (!holder.acquire(ACQUIRE_TIMEOUT_MS, TimeUnit.MILLISECONDS)) return "error the holder timed out";
    int contenders = waiters + 2;
    AtomicLong lastRelease = new AtomicLong();
    AtomicLong handoffs = new AtomicLong();
    long[] window = new long[2];  // deadline, stopped_at: written before the lock hands over
    boolean[] flags = new boolean[2];  // measuring, stop: the same
    Object guard = new Object();
    List<Worker> results = new ArrayList<>();
    List<Thread> running = new ArrayList<>();
    for (int c = 0; c < contenders; c++) {
      Worker worker = new Worker();
      Mutex mutex = new Mutex(sessions.get(c % sessions.size()), path);
      results.add(worker);
      running.add(new Thread(() -> {
        try {
          for (int round = 0; round < 1_000_000; round++) {
            if (!mutex.acquire(120_000, TimeUnit.MILLISECONDS)) throw new Exception("acquire timed out");
            long granted = System.nanoTime();
            boolean leave;
            synchronized (guard) {  // uncontended: the lock under test orders the holders
              if (flags[0] && !flags[1]) {
                worker.waits.add((granted - lastRelease.get()) / 1000);
                if (handoffs.incrementAndGet() >= target || granted >= window[0]) {
                  window[1] = granted;
                  flags[1] = true;
                }
              }
              leave = flags[1];
            }
            lastRelease.set(System.nanoTime());
            mutex.release();
            if (leave) return;
          }
        } catch (Exception e) {
          worker.error = e;
        }
      }));
    }
    for (Thread t : running) t.start();
    // Every contender queued behind the holder: a child watch, no polling.
    long queueDeadline = System.nanoTime() + 120_000_000_000L;
    for (;;) {
      CountDownLatch changed = new CountDownLatch(1);
      int children = sessions.get(0).getChildren().usingWatcher(
          (org.apache.curator.framework.api.CuratorWatcher) event -> changed.countDown()).forPath(path).size();
      if (children >= contenders + 1) break;
      long left = queueDeadline - System.nanoTime();
      if (left <= 0) return "error the queue did not form";
      changed.await(left, TimeUnit.NANOSECONDS);
    }
    long start = System.nanoTime();
    synchronized (guard) {
      window[0] = start + ms * 1_000_000;
      flags[0] = true;
    }
    lastRelease.set(System.nanoTime());
    holder.release();
    for (Thread t : running) t.join();
    StringBuilder latencies = new StringBuilder();
    for (Worker worker : results) {
      if (worker.error != null) return "error " + worker.error;
      for (long us : worker.waits) latencies.append(' ').append(us);
    }
    long stopped;
    synchronized (guard) {
      stopped = flags[1] ? window[1] : System.nanoTime();
    }
    return "done " + handoffs.get() + " " + (stopped - start) + latencies;
  }

  private static final class Worker {
    final List<long[]> holds = new ArrayList<>();  // enter, exit, token, index of the kind
    final List<Long> waits = new ArrayList<>();
    final List<Long> writeWaits = new ArrayList<>();  // w6's writers
    Exception error;
  }

  // One acquisition of a worker: acquire, record the hold and the wait,
  // release. False when the acquire timed out.
  private interface Hold {
    boolean once(int index, Worker worker) throws Exception;
  }

  // <workers> threads started together, each holding again and again until
  // ms have passed; a timed-out acquire ends its thread as an error.
  private static List<Worker> runWorkers(int workers, long ms, Hold hold) throws InterruptedException {
    List<Worker> results = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    CountDownLatch go = new CountDownLatch(1);
    long[] deadline = new long[1];
    for (int i = 0; i < workers; i++) {
      Worker worker = new Worker();
      int index = i;
      results.add(worker);
      threads.add(new Thread(() -> {
        try {
          go.await();
          while (worker.holds.size() < 1_000_000 && System.nanoTime() < deadline[0]) {
            if (!hold.once(index, worker)) throw new Exception("acquire timed out");
          }
        } catch (Exception e) {
          worker.error = e;
        }
      }));
    }
    for (Thread t : threads) t.start();
    deadline[0] = System.nanoTime() + ms * 1_000_000;
    go.countDown();  // orders the write of deadline before the workers' reads
    for (Thread t : threads) t.join();
    return results;
  }

  // Every worker's holds in the checker's format; a worker's error instead
  // fails the command, since its holds are then incomplete.
  private static long writeHolds(String intervalFile, List<Worker> results, String... kinds) throws Exception {
    long pid = ProcessHandle.current().pid();
    long holds = 0;
    try (PrintWriter file = new PrintWriter(Files.newBufferedWriter(Paths.get(intervalFile)))) {
      for (int i = 0; i < results.size(); i++) {
        Worker worker = results.get(i);
        if (worker.error != null) throw new Exception("worker " + i + ": " + worker.error);
        for (long[] h : worker.holds)
          file.println(pid + " " + i + " " + h[0] + " " + h[1] + " " + h[2] + " " + kinds[(int) h[3]]);
        holds += worker.holds.size();
      }
    }
    return holds;
  }

  private static String waits(List<Worker> results, boolean writers) {
    StringBuilder text = new StringBuilder();
    for (Worker worker : results)
      for (long us : writers ? worker.writeWaits : worker.waits) text.append(' ').append(us);
    return text.toString();
  }

  private String w2(String path, int workers, long ms, String intervalFile) throws Exception {
    if (workers > sessions.size()) return "error only " + sessions.size() + " sessions";
    AtomicLong counter = new AtomicLong();
    List<Mutex> mutexes = new ArrayList<>();
    for (int i = 0; i < workers; i++) mutexes.add(new Mutex(sessions.get(i), path));
    List<Worker> results = runWorkers(workers, ms, (i, worker) -> {
      Mutex mutex = mutexes.get(i);
      long t0 = System.nanoTime();
      if (!mutex.acquire(ACQUIRE_TIMEOUT_MS, TimeUnit.MILLISECONDS)) return false;
      long enter = System.nanoTime();
      worker.waits.add((enter - t0) / 1000);
      long read = counter.get();  // the unprotected read-modify-write
      Thread.yield();
      counter.set(read + 1);
      worker.holds.add(new long[] {enter, System.nanoTime(), mutex.sequence(), 0});
      mutex.release();
      return true;
    });
    long acquisitions = writeHolds(intervalFile, results, "curator");
    return "done " + acquisitions + " " + counter.get() + waits(results, false);
  }

  private String w6(String path, int workers, int writeEvery, long ms, String intervalFile) throws Exception {
    if (workers > sessions.size()) return "error only " + sessions.size() + " sessions";
    AtomicLong counter = new AtomicLong();
    List<ReadWriteLock> locks = new ArrayList<>();
    for (int i = 0; i < workers; i++) locks.add(ReadWriteLock.create(sessions.get(i), path));
    List<Worker> results = runWorkers(workers, ms, (i, worker) -> {
      ReadWriteLock lock = locks.get(i);
      boolean write = worker.holds.size() % writeEvery == writeEvery - 1;
      InterProcessMutex side = write ? (InterProcessMutex) lock.write : lock.read;
      long t0 = System.nanoTime();
      if (!side.acquire(ACQUIRE_TIMEOUT_MS, TimeUnit.MILLISECONDS)) return false;
      long enter = System.nanoTime();
      (write ? worker.writeWaits : worker.waits).add((enter - t0) / 1000);
      long token = write ? lock.write.sequence() : lock.read.sequence();
      if (write) {
        long read = counter.get();  // the read-modify-write only the write lock protects
        Thread.yield();
        counter.set(read + 1);
      } else {
        counter.get();  // a reader that looks, as long as a write takes
        Thread.yield();
        counter.get();
      }
      worker.holds.add(new long[] {enter, System.nanoTime(), token, write ? 1 : 0});
      side.release();
      return true;
    });
    writeHolds(intervalFile, results, "read", "write");
    long reads = 0;
    long writes = 0;
    for (Worker worker : results) {
      reads += worker.waits.size();
      writes += worker.writeWaits.size();
    }
    return "done " + reads + " " + writes + " " + counter.get() + waits(results, false) + waits(results, true);
  }

  private String w7Semaphore(String path, int workers, int leases, int reads, long ms, String intervalFile)
      throws Exception {
    if (workers > sessions.size()) return "error only " + sessions.size() + " sessions";
    List<InterProcessSemaphoreV2> semaphores = new ArrayList<>();
    for (int i = 0; i < workers; i++) semaphores.add(new InterProcessSemaphoreV2(sessions.get(i), path, leases));
    List<Worker> results = runWorkers(workers, ms, (i, worker) -> {
      long t0 = System.nanoTime();
      Lease lease = semaphores.get(i).acquire(ACQUIRE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      if (lease == null) return false;
      long enter = System.nanoTime();
      worker.waits.add((enter - t0) / 1000);
      // The holder's work, as ours: holds outlast a grant, so the bound limits.
      for (int r = 0; r < reads; r++) sessions.get(i).checkExists().forPath(path);
      worker.holds.add(new long[] {enter, System.nanoTime(), 0, 0});
      lease.close();
      return true;
    });
    return "done " + writeHolds(intervalFile, results, "semaphore") + waits(results, false);
  }

  private String w7Mutex(String path, int workers, long ms, String intervalFile) throws Exception {
    if (workers > sessions.size()) return "error only " + sessions.size() + " sessions";
    List<InterProcessSemaphoreMutex> mutexes = new ArrayList<>();
    for (int i = 0; i < workers; i++) mutexes.add(new InterProcessSemaphoreMutex(sessions.get(i), path));
    List<Worker> results = runWorkers(workers, ms, (i, worker) -> {
      InterProcessSemaphoreMutex mutex = mutexes.get(i);
      long t0 = System.nanoTime();
      if (!mutex.acquire(ACQUIRE_TIMEOUT_MS, TimeUnit.MILLISECONDS)) return false;
      long enter = System.nanoTime();
      worker.waits.add((enter - t0) / 1000);
      Thread.yield();
      worker.holds.add(new long[] {enter, System.nanoTime(), 0, 0});
      mutex.release();
      return true;
    });
    return "done " + writeHolds(intervalFile, results, "mutex") + waits(results, false);
  }
}
