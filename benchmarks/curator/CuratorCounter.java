// W10 of `zkr bench --peers curator`: adds to Apache Curator's own
// DistributedAtomicLong (Debian's 5.4 jars), for CuratorBench's command
//   w10-counter <path> <workers> <adds per worker> <retries> <ms>
//       -> done <succeeded> <failed> <conflicts> <ns> <add us>...
// <workers> threads, each on its own session with a DistributedAtomicLong of
// its own on <path>, increment() until they made <adds per worker> calls or
// <ms> passed, under RetryNTimes(<retries>, 0 ms), the policy the C++ side
// gives ours. <failed>: increments that ran out of retries; <conflicts>:
// versioned writes refused (AtomicStats' optimistic tries, less the one that
// succeeded); <ns> the time of the whole run; one <add us> per success.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.retry.RetryNTimes;

final class CuratorCounter {
  private CuratorCounter() {}

  static String adds(List<CuratorFramework> sessions, String path, int workers, long addsPerWorker, int retries,
      long ms) throws Exception {
    if (workers > sessions.size()) return "error only " + sessions.size() + " sessions";
    final long start = System.nanoTime();
    final long deadline = start + ms * 1_000_000;
    final AtomicLong failed = new AtomicLong();
    final AtomicLong conflicts = new AtomicLong();
    final List<List<Long>> samples = new ArrayList<>();
    final List<Exception> errors = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < workers; i++) {
      final DistributedAtomicLong counter =
          new DistributedAtomicLong(sessions.get(i), path, new RetryNTimes(retries, 0));
      final List<Long> mine = new ArrayList<>();
      samples.add(mine);
      threads.add(new Thread(() -> {
        try {
          for (long n = 0; n < addsPerWorker && System.nanoTime() < deadline; n++) {
            long t0 = System.nanoTime();
            AtomicValue<Long> r = counter.increment();
            long took = System.nanoTime() - t0;
            int tries = r.getStats().getOptimisticTries();
            if (r.succeeded()) {
              mine.add(took / 1000);
              conflicts.addAndGet(Math.max(0, tries - 1));
            } else {
              failed.incrementAndGet();
              conflicts.addAndGet(tries);
            }
          }
        } catch (Exception e) {
          synchronized (errors) {
            errors.add(e);
          }
        }
      }));
    }
    for (Thread t : threads) t.start();
    for (Thread t : threads) t.join();
    long ns = System.nanoTime() - start;
    if (!errors.isEmpty()) return "error " + errors.get(0);
    StringBuilder out = new StringBuilder();
    long succeeded = 0;
    for (List<Long> mine : samples) succeeded += mine.size();
    out.append("done ").append(succeeded).append(' ').append(failed.get()).append(' ')
        .append(conflicts.get()).append(' ').append(ns);
    for (List<Long> mine : samples)
      for (long us : mine) out.append(' ').append(us);
    return out.toString();
  }
}
