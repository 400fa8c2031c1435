// W10b of `zkr bench --peers curator`: convergence of Apache Curator's own
// CuratorCache (Debian's 5.4 jars; its PathChildrenCache is deprecated), for
// CuratorBench's commands, one round in three so that the C++ side counts
// the servers' requests around the middle one only:
//   w10-cache-start <group path>
//       -> done: the group made (persistent), a CuratorCache on session 0
//          started on it and initialized
//   w10-cache-run <changes> <members>
//       -> done <ns>: session 1 makes the member changes (the rule of
//          benchmarks/w10_changes.hpp: members m0.. visited in turn, each
//          created ephemeral with data "d<i>", its data set to "d<i>",
//          deleted), each waited for; <ns> from the last change's reply to
//          the cache event after which its children of the group, with their
//          data, are the final members
//   w10-cache-check
//       -> done <0|1>: 1 if the cache's children then equal the servers' tree
//          read afresh (names, data, czxid, mzxid); the cache closed, the
//          members and the group deleted
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;

final class CuratorCacheRound {
  private static final long CONVERGE_WAIT_S = 60;

  private static String group;
  private static CuratorCache cache;
  private static volatile Map<String, String> target;  // null until a run begins
  private static final AtomicLong convergedAt = new AtomicLong();
  private static volatile CountDownLatch converged = new CountDownLatch(1);

  private CuratorCacheRound() {}

  static String start(List<CuratorFramework> sessions, String path) throws Exception {
    if (sessions.size() < 2) return "error only " + sessions.size() + " sessions";
    if (cache != null) return "error a round is open";
    group = path;
    target = null;
    convergedAt.set(0);
    converged = new CountDownLatch(1);
    sessions.get(1).create().creatingParentContainersIfNeeded().forPath(group);
    CountDownLatch initialized = new CountDownLatch(1);
    cache = CuratorCache.build(sessions.get(0), group);
    cache.listenable().addListener(new CuratorCacheListener() {
      @Override
      public void event(Type type, ChildData oldData, ChildData data) {
        long now = System.nanoTime();
        Map<String, String> want = target;
        if (want != null && convergedAt.get() == 0 && want.equals(members())) {
          convergedAt.compareAndSet(0, now);
          converged.countDown();
        }
      }

      @Override
      public void initialized() {
        initialized.countDown();
      }
    });
    cache.start();
    if (!initialized.await(30, TimeUnit.SECONDS)) return "error the cache did not initialize in 30 s";
    return "done";
  }

  // The cache's children of the group: name -> data.
  private static Map<String, String> members() {
    Map<String, String> out = new TreeMap<>();
    String prefix = group + "/";
    cache.stream().forEach(d -> {
      String p = d.getPath();
      if (p.startsWith(prefix) && p.indexOf('/', prefix.length()) < 0)
        out.put(p.substring(prefix.length()), d.getData() == null ? "" : new String(d.getData(), StandardCharsets.UTF_8));
    });
    return out;
  }

  static String run(List<CuratorFramework> sessions, int changes, int members) throws Exception {
    if (cache == null) return "error no round open";
    // The same rule as benchmarks/w10_changes.cpp.
    int[] step = new int[members];
    Map<String, String> last = new TreeMap<>();
    for (int i = 0; i < changes; i++) {
      int m = i % members;
      String name = "m" + m;
      if (step[m] == 2) last.remove(name);
      else last.put(name, "d" + i);
      step[m] = (step[m] + 1) % 3;
    }
    target = last;
    CuratorFramework writer = sessions.get(1);
    java.util.Arrays.fill(step, 0);
    for (int i = 0; i < changes; i++) {
      int m = i % members;
      String path = group + "/m" + m;
      byte[] data = ("d" + i).getBytes(StandardCharsets.UTF_8);
      if (step[m] == 0) writer.create().withMode(CreateMode.EPHEMERAL).forPath(path, data);
      else if (step[m] == 1) writer.setData().forPath(path, data);
      else writer.delete().forPath(path);
      step[m] = (step[m] + 1) % 3;
    }
    long lastReply = System.nanoTime();
    // Already equal (an event raced the assignment of target): checked once more here.
    if (convergedAt.get() == 0 && last.equals(members())) {
      convergedAt.compareAndSet(0, System.nanoTime());
      converged.countDown();
    }
    if (!converged.await(CONVERGE_WAIT_S, TimeUnit.SECONDS))
      return "error the cache did not reach the final members in " + CONVERGE_WAIT_S + " s";
    return "done " + Math.max(0, convergedAt.get() - lastReply);
  }

  static String check(List<CuratorFramework> sessions) throws Exception {
    if (cache == null) return "error no round open";
    CuratorFramework reader = sessions.get(1);
    boolean equal = true;
    Map<String, ChildData> held = new TreeMap<>();
    String prefix = group + "/";
    cache.stream().forEach(d -> {
      String p = d.getPath();
      if (p.startsWith(prefix) && p.indexOf('/', prefix.length()) < 0) held.put(p.substring(prefix.length()), d);
    });
    List<String> names = reader.getChildren().forPath(group);
    if (names.size() != held.size()) equal = false;
    for (String name : names) {
      Stat stat = new Stat();
      byte[] data = reader.getData().storingStatIn(stat).forPath(prefix + name);
      ChildData mine = held.get(name);
      if (mine == null || !java.util.Arrays.equals(mine.getData(), data) || mine.getStat().getCzxid() != stat.getCzxid()
          || mine.getStat().getMzxid() != stat.getMzxid())
        equal = false;
    }
    cache.close();
    cache = null;
    for (String name : reader.getChildren().forPath(group)) reader.delete().forPath(prefix + name);
    reader.delete().forPath(group);
    return "done " + (equal ? 1 : 0);
  }
}
