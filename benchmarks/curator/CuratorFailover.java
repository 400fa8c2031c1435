// W9 of `zkr bench --peers curator`: failover of Apache Curator's own
// LeaderLatch (Debian's 5.4 jars), for CuratorBench's command
//   w9-close <latch path> <participants> <rounds> <ms>
//       -> done <elections> <violations> <ns> <failover us>...
// <participants> threads, each on its own session, join one LeaderLatch;
// whoever leads waits until every participant is queued, then closes and
// joins again at the back. A failover is timed from the leader's close()
// call to the next leader's await() returning; <violations> counts terms
// begun while another was held. Ends after <rounds> failovers or when a term
// starts past <ms>; <ns> is the time from the start to that last term.
//
// And a kill, in three commands around the C++ side cutting the victim's
// link (its proxies stop forwarding both ways: the servers hear nothing more
// from its session, as from a killed process, and only its expiry frees the
// leadership):
//   w9-victim <connect via proxies> <latch path> <session ms> <participants>
//       -> done: a new session through the proxies joins the latch and leads;
//          <participants> - 1 standbys (the peer's sessions) queue behind it
//   w9-standby-wait <ms>
//       -> done <ns>: CLOCK_MONOTONIC (System.nanoTime) when a standby's
//          await returned; the standbys then close
//   w9-victim-close
//       -> done: the victim's latch and session closed (once its link is back)
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.CuratorWatcher;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.retry.ExponentialBackoffRetry;

final class CuratorFailover {
  private static final long QUEUE_WAIT_NS = 60_000_000_000L;

  private final String path;
  private final int participants;
  private final long rounds;
  private final long deadline;
  private final AtomicInteger leading = new AtomicInteger();
  private final AtomicLong violations = new AtomicLong();
  private final AtomicLong closedAt = new AtomicLong();  // 0: nobody closed yet
  private final AtomicLong endedAt = new AtomicLong();
  private final AtomicBoolean done = new AtomicBoolean();
  private final CountDownLatch finished = new CountDownLatch(1);
  private final List<Long> failovers = new ArrayList<>();  // guarded by itself
  private final List<Exception> errors = new ArrayList<>();  // guarded by itself

  private CuratorFailover(String path, int participants, long rounds, long ms) {
    this.path = path;
    this.participants = participants;
    this.rounds = rounds;
    this.deadline = System.nanoTime() + ms * 1_000_000;
  }

  static String close(List<CuratorFramework> sessions, String path, int participants, long rounds, long ms)
      throws Exception {
    if (participants > sessions.size()) return "error only " + sessions.size() + " sessions";
    long start = System.nanoTime();
    CuratorFailover run = new CuratorFailover(path, participants, rounds, ms);
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < participants; i++) {
      CuratorFramework session = sessions.get(i);
      String id = "w9-curator-" + i;
      threads.add(new Thread(() -> run.participant(session, id)));
    }
    for (Thread t : threads) t.start();
    boolean inTime = run.finished.await(ms + 60_000, TimeUnit.MILLISECONDS);
    run.done.set(true);
    for (Thread t : threads) t.interrupt();  // the others' awaits end
    for (Thread t : threads) t.join();
    synchronized (run.errors) {
      if (!run.errors.isEmpty()) return "error " + run.errors.get(0).toString().replace('\n', ' ');
    }
    if (!inTime) return "error the rounds did not end in time";
    StringBuilder reply = new StringBuilder("done ");
    synchronized (run.failovers) {
      reply.append(run.failovers.size()).append(' ').append(run.violations.get()).append(' ')
          .append(run.endedAt.get() - start);
      for (long us : run.failovers) reply.append(' ').append(us);
    }
    return reply.toString();
  }

  private void participant(CuratorFramework session, String id) {
    try {
      while (!done.get()) {
        LeaderLatch latch = new LeaderLatch(session, path, id);
        latch.start();
        try {
          latch.await();  // until leader, or interrupted at the end
          long started = System.nanoTime();
          if (done.get()) return;
          if (leading.incrementAndGet() != 1) violations.incrementAndGet();
          boolean last = started >= deadline;
          long closed = closedAt.get();
          if (closed != 0) {
            synchronized (failovers) {
              failovers.add((started - closed) / 1000);
              last = last || failovers.size() >= rounds;
            }
          }
          if (last) {
            endedAt.set(started);
            done.set(true);  // before our close: nobody else starts a term
            leading.decrementAndGet();
            finished.countDown();
            return;
          }
          awaitQueued(session);
          leading.decrementAndGet();
          closedAt.set(System.nanoTime());
        } finally {
          latch.close();
        }
      }
    } catch (InterruptedException e) {
      // The end: another participant led the last round.
    } catch (Exception e) {
      synchronized (errors) {
        errors.add(e);
      }
      finished.countDown();
    }
  }

  // Every participant has a node under the latch path: a child watch, no polling.
  private void awaitQueued(CuratorFramework session) throws Exception {
    long giveUp = System.nanoTime() + QUEUE_WAIT_NS;
    for (;;) {
      CountDownLatch changed = new CountDownLatch(1);
      int children = session.getChildren()
          .usingWatcher((CuratorWatcher) event -> changed.countDown()).forPath(path).size();
      if (children >= participants) return;
      long left = giveUp - System.nanoTime();
      if (left <= 0) throw new Exception("the participants did not queue within 60 s");
      changed.await(left, TimeUnit.NANOSECONDS);
    }
  }

  // The kill's state between its commands: one kill at a time.
  private static CuratorFramework victimSession;
  private static LeaderLatch victimLatch;
  private static final List<LeaderLatch> standbys = new ArrayList<>();
  private static final List<Thread> standbyThreads = new ArrayList<>();
  private static final AtomicLong standbyLedAt = new AtomicLong();
  private static CountDownLatch standbyLed;

  static String victim(List<CuratorFramework> sessions, String via, String path, int sessionMs, int participants)
      throws Exception {
    if (participants - 1 > sessions.size()) return "error only " + sessions.size() + " sessions";
    if (victimSession != null) return "error a victim is still open";
    victimSession = CuratorFrameworkFactory.builder()
        .connectString(via)
        .sessionTimeoutMs(sessionMs)
        .connectionTimeoutMs(Math.min(sessionMs, 15_000))
        .retryPolicy(new ExponentialBackoffRetry(50, 10, 1000))
        .build();
    victimSession.start();
    if (!victimSession.blockUntilConnected(30, TimeUnit.SECONDS)) return "error the victim did not connect";
    victimLatch = new LeaderLatch(victimSession, path, "w9-curator-victim");
    victimLatch.start();
    if (!victimLatch.await(30, TimeUnit.SECONDS)) return "error the victim did not lead within 30 s";
    standbyLedAt.set(0);
    standbyLed = new CountDownLatch(1);
    for (int i = 0; i < participants - 1; i++) {
      LeaderLatch latch = new LeaderLatch(sessions.get(i), path, "w9-curator-standby-" + i);
      standbys.add(latch);
      Thread t = new Thread(() -> {
        try {
          latch.await();
          long led = System.nanoTime();
          if (standbyLedAt.compareAndSet(0, led)) standbyLed.countDown();
        } catch (InterruptedException e) {
          // the end: another standby led
        } catch (Exception e) {
          // closed under it (EOFException): no term to time
        }
      });
      standbyThreads.add(t);
      latch.start();
      t.start();
    }
    new CuratorFailover(path, participants, 0, 0).awaitQueued(sessions.get(0));
    return "done";
  }

  static String standbyWait(long ms) throws Exception {
    if (standbyLed == null) return "error no victim";
    boolean led = standbyLed.await(ms, TimeUnit.MILLISECONDS);
    for (Thread t : standbyThreads) t.interrupt();
    for (Thread t : standbyThreads) t.join();
    for (LeaderLatch latch : standbys) latch.close();
    standbyThreads.clear();
    standbys.clear();
    standbyLed = null;
    if (!led) return "error no standby led within " + ms + " ms";
    return "done " + standbyLedAt.get();
  }

  static String victimClose() throws Exception {
    if (victimSession == null) return "error no victim";
    try {
      victimLatch.close();
    } catch (IllegalStateException e) {
      // already closed by Curator after the session was lost
    } finally {
      victimSession.close();
      victimSession = null;
      victimLatch = null;
    }
    return "done";
  }
}
