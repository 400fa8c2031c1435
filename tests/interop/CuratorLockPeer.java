// A lock client built on Apache Curator's own InterProcessMutex, driven by
// tests/integration/curator_interop_test.cpp to prove that Curator and
// zkrecipes exclude each other on the same lock path; and on Curator's other
// lock recipes, which our locks must refuse to share a path with.
//
//   java -cp <curator jars>:<dir of this class> CuratorLockPeer <connect string>
//
// One command per line on stdin, one reply per line on stdout:
//   acquire <path> <timeout_ms>   -> acquired <lock node path> | timeout
//   semaphore-mutex <path> <timeout_ms> -> acquired | timeout: Curator's own
//                                    InterProcessSemaphoreMutex (locks/, leases/)
//   write-lock <path> <timeout_ms> -> acquired | timeout: the write lock of
//   read-lock <path> <timeout_ms>     (or read lock) of Curator's InterProcessReadWriteLock
//   release                       -> released   (the lock acquired last)
//   participants <path>           -> participants [<node path> ...]  (queue order)
//   count <lock path> <counter path> <n> <timeout_ms> <mark>
//                                 -> counted <n>: n times, under the lock, reads the
//                                    counter and writes it back with <mark> appended
//                                    (its length counts the holds, its letters say
//                                    in which order the holders came)
//   rw-count <lock path> <counter path> <writes> <reads> <timeout_ms> <mark>
//                                 -> rw-counted <writes> <reads> <overlaps>: with
//                                    Curator's InterProcessReadWriteLock, <writes>
//                                    write holds (append <mark> to the counter, as
//                                    count does) among <reads> read holds (sync, read
//                                    the counter, sync, read it again: a change is a
//                                    writer beside the reader, counted in <overlaps>)
//   lease-count <path> <max> <holds> <timeout_ms> <holders dir> <looks>
//                                 -> lease-counted <holds> <most>: with Curator's
//                                    InterProcessSemaphoreV2 of <max> leases, <holds>
//                                    times: take a lease, create an ephemeral
//                                    sequential node in <holders dir>, <looks> times
//                                    sync and count its children (<most>: the largest
//                                    count seen),
//                                    delete the node, return the lease
//   sort <name> ...               -> sorted <name> ...: the names in the order
//                                    Curator's InterProcessMutex queues them, by
//                                    Curator's own LockInternals.getSortedChildren
//   latch-start <path> <id>       -> started: Curator's LeaderLatch with that id,
//                                    started (one at a time)
//   latch-await <timeout_ms>      -> leader | timeout
//   latch-has                     -> has true|false   (hasLeadership)
//   latch-leader                  -> leader-id <id> <isLeader>   (getLeader)
//   latch-close                   -> closed
//   selector-start <path> <id>    -> started: Curator's LeaderSelector with that id,
//                                    started without autoRequeue (one at a time);
//                                    its takeLeadership holds until selector-end
//   selector-await <timeout_ms>   -> leader | timeout   (takeLeadership was called)
//   selector-has                  -> has true|false   (hasLeadership)
//   selector-leader               -> leader-id <id> <isLeader>   (getLeader)
//   selector-end                  -> ended: takeLeadership returns, the term ends
//   selector-close                -> closed
//   count-add <path> <n> <delta>  -> count-added <n>: Curator's SharedCount on <path>
//                                    (seed 0), n times: trySetCount(seen, seen + delta)
//                                    until it succeeds
//   count-get <path>              -> count <value>   (after a sync: SharedCount.getCount
//                                    after start)
//   along-add <path> <n> <delta>  -> along-added <succeeded>: Curator's
//                                    DistributedAtomicLong on <path>, n adds
//   along-get <path>              -> along <value>   (after a sync: DistributedAtomicLong.get)
//   quit                          -> bye
// Anything that goes wrong           -> error <message> (details on stderr).
// It prints "ready" once connected. stdout carries nothing but replies: every
// library that prints goes to stderr instead (see main).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.zookeeper.CreateMode;
import org.apache.curator.framework.recipes.locks.LockInternals;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorLockPeer {
  // Short, so that the nodes of a peer killed by a failing test go soon.
  private static final int SESSION_TIMEOUT_MS = 4000;
  private static final int CONNECTION_TIMEOUT_MS = 5000;
  private static final int CONNECT_WAIT_S = 30;

  // InterProcessMutex's lock name (Curator's own constant is private).
  private static final String LOCK_NAME = "lock-";

  // Curator's InterProcessMutex unchanged; only its protected lock path is made
  // visible, so the test can check the node name Curator chose.
  private static final class Mutex extends InterProcessMutex {
    Mutex(CuratorFramework client, String path) {
      super(client, path);
    }

    String nodePath() {
      return getLockPath();
    }
  }

  private final CuratorFramework client;
  private final PrintStream out;
  // Locks this peer holds, the last acquired on top; `release` pops it.
  private final Deque<InterProcessLock> held = new ArrayDeque<>();
  // The latch `latch-start` started, until `latch-close`.
  private LeaderLatch latch;
  // The selector `selector-start` started, until `selector-close`; a permit
  // in `termsBegun` for each takeLeadership call, one in `termEnds` ends it.
  private LeaderSelector selector;
  private GroupMember member;
  private final Semaphore termsBegun = new Semaphore(0);
  private final Semaphore termEnds = new Semaphore(0);

  private CuratorLockPeer(CuratorFramework client, PrintStream out) {
    this.client = client;
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: CuratorLockPeer <connect string>");
      System.exit(2);
    }
    // The protocol owns the real stdout; whatever a library prints goes to stderr.
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    System.setOut(System.err);

    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(args[0])
        .sessionTimeoutMs(SESSION_TIMEOUT_MS)
        .connectionTimeoutMs(CONNECTION_TIMEOUT_MS)
        .retryPolicy(new ExponentialBackoffRetry(50, 10, 1000))
        .build();
    client.start();
    try {
      if (!client.blockUntilConnected(CONNECT_WAIT_S, TimeUnit.SECONDS)) {
        out.println("error not connected within " + CONNECT_WAIT_S + " s");
        return;
      }
      out.println("ready");
      new CuratorLockPeer(client, out).serve();
    } finally {
      // Closing the session deletes the ephemeral lock nodes at once.
      client.close();
    }
  }

  // Until quit or end of input.
  private void serve() throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      String[] words = line.trim().split("\\s+");
      if (words[0].equals("quit")) {
        out.println("bye");
        return;
      }
      String reply;
      try {
        reply = run(words);
      } catch (Exception e) {
        e.printStackTrace();
        reply = "error " + e;
      }
      out.println(reply.replace('\n', ' '));
    }
  }

  // A malformed command throws (a missing word, a bad number): the caller
  // turns that into an error reply.
  private String run(String[] words) throws Exception {
    switch (words[0]) {
      case "acquire":
        return acquire(words[1], Long.parseLong(words[2]));
      case "semaphore-mutex":
        return acquire(new InterProcessSemaphoreMutex(client, words[1]), Long.parseLong(words[2]));
      case "write-lock":
        return acquire(new InterProcessReadWriteLock(client, words[1]).writeLock(), Long.parseLong(words[2]));
      case "read-lock":
        return acquire(new InterProcessReadWriteLock(client, words[1]).readLock(), Long.parseLong(words[2]));
      case "release":
        if (held.isEmpty()) return "error nothing held";
        held.pop().release();
        return "released";
      case "participants":
        return reply("participants", new Mutex(client, words[1]).getParticipantNodes());
      case "count":
        return count(words[1], words[2], Integer.parseInt(words[3]), Long.parseLong(words[4]), words[5]);
      case "lease-count":
        return leaseCount(words[1], Integer.parseInt(words[2]), Integer.parseInt(words[3]),
                          Long.parseLong(words[4]), words[5], Integer.parseInt(words[6]));
      case "rw-count":
        return readWriteCount(words[1], words[2], Integer.parseInt(words[3]), Integer.parseInt(words[4]),
                              Long.parseLong(words[5]), words[6]);
      case "sort":
        // Curator's own sort, the one its lock loop uses; no server involved.
        // In the 5.4.0 jar (javap -c -p) it is Collections.sort with a comparator
        // that compares driver.fixForSorting(name, "lock-") by String.compareTo;
        // StandardLockInternalsDriver's fixForSorting is the text after the last
        // "lock-". Calling it, not restating it, is the point.
        List<String> names = Arrays.asList(words).subList(1, words.length);
        return reply("sorted", LockInternals.getSortedChildren(LOCK_NAME, new StandardLockInternalsDriver(), names));
      case "latch-start":
        if (latch != null) return "error a latch is already started";
        latch = new LeaderLatch(client, words[1], words[2]);
        latch.start();
        return "started";
      case "latch-await":
        return latch.await(Long.parseLong(words[1]), TimeUnit.MILLISECONDS) ? "leader" : "timeout";
      case "latch-has":
        return "has " + latch.hasLeadership();
      case "latch-leader": {
        Participant leader = latch.getLeader();
        return "leader-id " + leader.getId() + " " + leader.isLeader();
      }
      case "latch-close":
        latch.close();
        latch = null;
        return "closed";
      case "selector-start":
        if (selector != null) return "error a selector is already started";
        termsBegun.drainPermits();
        termEnds.drainPermits();
        selector = new LeaderSelector(client, words[1], new LeaderSelectorListenerAdapter() {
          @Override
          public void takeLeadership(CuratorFramework unused) throws Exception {
            termsBegun.release();
            termEnds.acquire();
          }
        });
        selector.setId(words[2]);
        selector.start();
        return "started";
      case "selector-await":
        return termsBegun.tryAcquire(Long.parseLong(words[1]), TimeUnit.MILLISECONDS) ? "leader" : "timeout";
      case "selector-has":
        return "has " + selector.hasLeadership();
      case "selector-leader": {
        Participant leader = selector.getLeader();
        return "leader-id " + leader.getId() + " " + leader.isLeader();
      }
      case "selector-end":
        termEnds.release();
        return "ended";
      case "selector-close":
        selector.close();
        selector = null;
        return "closed";
      case "count-add":
        return countAdd(words[1], Integer.parseInt(words[2]), Integer.parseInt(words[3]));
      case "count-get":
        // Synced first: our writes may not have reached this peer's server yet.
        client.sync().forPath(words[1]);
        try (SharedCount count = new SharedCount(client, words[1], 0)) {
          count.start();
          return "count " + count.getCount();
        }
      case "along-add":
        return atomicLongAdd(words[1], Integer.parseInt(words[2]), Long.parseLong(words[3]));
      case "along-get":
        client.sync().forPath(words[1]);
        return "along " + atomicLong(words[1]).get().postValue();
      case "group-start":
        if (member != null) return "error a member is already started";
        member = new GroupMember(client, words[1], words[2], words[3].getBytes(StandardCharsets.UTF_8));
        member.start();
        return "started";
      case "group-set":
        member.setThisData(words[1].getBytes(StandardCharsets.UTF_8));
        return "set";
      case "group-members":
        return members();
      case "group-await":
        return awaitMembers(words[1], Long.parseLong(words[2]));
      case "group-close":
        member.close();
        member = null;
        return "closed";
      default:
        return "error unknown command: " + words[0];
    }
  }

  // "members id=data ..." in id order, as getCurrentMembers() has them.
  private String members() {
    Map<String, String> sorted = new TreeMap<>();
    for (Map.Entry<String, byte[]> e : member.getCurrentMembers().entrySet())
      sorted.put(e.getKey(), new String(e.getValue(), StandardCharsets.UTF_8));
    StringBuilder line = new StringBuilder("members");
    for (Map.Entry<String, String> e : sorted.entrySet())
      line.append(' ').append(e.getKey()).append('=').append(e.getValue());
    return line.toString();
  }

  // Until members() says exactly `expected` ("id=data,id=data"), or the
  // timeout. GroupMember tells no one of changes (its cache is private),
  // so this looks every 20 ms, a bounded number of times.
  private String awaitMembers(String expected, long timeoutMs) throws Exception {
    String want = "members " + expected.replace(',', ' ');
    String seen = members();
    for (long waited = 0; !seen.equals(want) && waited < timeoutMs; waited += 20) {
      Thread.sleep(20);
      seen = members();
    }
    return seen;
  }

  private static String reply(String word, Collection<String> items) {
    return items.isEmpty() ? word : word + " " + String.join(" ", items);
  }

  private String acquire(String path, long timeoutMs) throws Exception {
    Mutex mutex = new Mutex(client, path);
    if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) return "timeout";
    held.push(mutex);
    return "acquired " + mutex.nodePath();
  }

  // Another of Curator's lock recipes; its nodes the test reads from the server.
  private String acquire(InterProcessLock lock, long timeoutMs) throws Exception {
    if (!lock.acquire(timeoutMs, TimeUnit.MILLISECONDS)) return "timeout";
    held.push(lock);
    return "acquired";
  }

  // The critical section is deliberately unprotected by versions: a get, then a
  // set that overwrites whatever is there. Only the lock keeps marks from
  // being lost.
  private String count(String lockPath, String counterPath, int n, long timeoutMs, String mark)
      throws Exception {
    Mutex mutex = new Mutex(client, lockPath);
    for (int i = 0; i < n; i++) {
      if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) return "error timeout at " + i;
      try {
        String value = new String(client.getData().forPath(counterPath), StandardCharsets.UTF_8);
        client.setData().forPath(counterPath, (value + mark).getBytes(StandardCharsets.UTF_8));
      } finally {
        mutex.release();
      }
    }
    return "counted " + n;
  }

  private String leaseCount(String path, int max, int holds, long timeoutMs, String holdersDir,
                            int looks) throws Exception {
    InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, max);
    int most = 0;
    for (int i = 0; i < holds; i++) {
      Lease lease = semaphore.acquire(timeoutMs, TimeUnit.MILLISECONDS);
      if (lease == null) return "error timeout at " + i;
      try {
        String mine = client.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(holdersDir + "/j-");
        for (int look = 0; look < looks; look++) {
          client.sync().forPath(holdersDir);
          most = Math.max(most, client.getChildren().forPath(holdersDir).size());
        }
        client.delete().forPath(mine);
      } finally {
        semaphore.returnLease(lease);
      }
    }
    return "lease-counted " + holds + " " + most;
  }

  // Writes spread evenly among the reads. A read syncs first, so that it sees
  // every write made before its grant, and again before its second look, so
  // that it sees any write made while it held.
  private String readWriteCount(String lockPath, String counterPath, int writes, int reads,
                                long timeoutMs, String mark) throws Exception {
    InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, lockPath);
    int overlaps = 0;
    for (int i = 0; i < writes + reads; i++) {
      boolean write = (long) (i + 1) * writes / (writes + reads) > (long) i * writes / (writes + reads);
      InterProcessLock side = write ? lock.writeLock() : lock.readLock();
      if (!side.acquire(timeoutMs, TimeUnit.MILLISECONDS)) return "error timeout at " + i;
      try {
        if (write) {
          String value = new String(client.getData().forPath(counterPath), StandardCharsets.UTF_8);
          client.setData().forPath(counterPath, (value + mark).getBytes(StandardCharsets.UTF_8));
        } else {
          client.sync().forPath(counterPath);
          String before = new String(client.getData().forPath(counterPath), StandardCharsets.UTF_8);
          client.sync().forPath(counterPath);
          String after = new String(client.getData().forPath(counterPath), StandardCharsets.UTF_8);
          if (!before.equals(after)) overlaps++;
        }
      } finally {
        side.release();
      }
    }
    return "rw-counted " + writes + " " + reads + " " + overlaps;
  }

  // Curator's SharedCount as its users write an add: compare-and-set on the
  // value seen, again on a refusal (which re-reads it).
  private String countAdd(String path, int n, int delta) throws Exception {
    try (SharedCount count = new SharedCount(client, path, 0)) {
      count.start();
      for (int i = 0; i < n; i++) {
        for (;;) {
          VersionedValue<Integer> seen = count.getVersionedValue();
          if (count.trySetCount(seen, seen.getValue() + delta)) break;
        }
      }
    }
    return "count-added " + n;
  }

  // Many attempts: the contention of the interop test must never run them out.
  private DistributedAtomicLong atomicLong(String path) {
    return new DistributedAtomicLong(client, path, new RetryNTimes(10000, 1));
  }

  private String atomicLongAdd(String path, int n, long delta) throws Exception {
    DistributedAtomicLong counter = atomicLong(path);
    int succeeded = 0;
    for (int i = 0; i < n; i++) {
      AtomicValue<Long> result = counter.add(delta);
      if (result.succeeded()) succeeded++;
    }
    return "along-added " + succeeded;
  }
}
