#include "options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <CLI/CLI.hpp>

namespace zkr::bench {
namespace {

const std::vector<std::string> kAllWorkloads = {"W1", "W2", "W3", "W4", "W5",
                                                "W6", "W7", "W8", "W9", "W10"};

std::vector<std::string> parse_workloads(const std::string& text) {
  std::vector<std::string> picked;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string name = text.substr(start, comma - start);
    for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (std::find(kAllWorkloads.begin(), kAllWorkloads.end(), name) == kAllWorkloads.end())
      throw UsageError("unknown workload '" + name +
                       "' in --workloads (use W1,W2,W3,W4,W5,W6,W7,W8,W9,W10)");
    if (std::find(picked.begin(), picked.end(), name) == picked.end()) picked.push_back(name);
    start = comma + 1;
  }
  // Always in the canonical order: W3's memory check wants to run before W4's
  // big listings raise the peak.
  std::vector<std::string> ordered;
  for (const auto& w : kAllWorkloads)
    if (std::find(picked.begin(), picked.end(), w) != picked.end()) ordered.push_back(w);
  return ordered;
}

std::uint64_t parse_count(const std::string& option, const std::string& text) {
  std::uint64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end)
    throw UsageError(option + " needs a non-negative integer (got '" + text + "')");
  return value;
}

std::vector<double> parse_rtts(const std::string& text) {
  std::vector<double> rtts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    double ms = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), ms);
    if (ec != std::errc() || ptr != item.data() + item.size() || ms < 0 || ms > 1000)
      throw UsageError("--rtt needs milliseconds from 0 to 1000, comma-separated (got '" + item +
                       "')");
    if (std::find(rtts.begin(), rtts.end(), ms) == rtts.end()) rtts.push_back(ms);
    start = comma + 1;
  }
  std::sort(rtts.begin(), rtts.end());
  return rtts;
}

}  // namespace

bool Options::wants(const std::string& workload) const {
  return std::find(workloads.begin(), workloads.end(), workload) != workloads.end();
}

Options parse_options(const std::vector<std::string>& args) {
  Options options;
  if (const char* env = std::getenv("ZK_CONNECT")) options.connect = env;
  CLI::App app;
  app.set_help_flag();  // usage_text() is the help; -h is a flag below
  // Unknown options come back in remaining(), refused below in our words.
  app.allow_extras();
  // An option given twice: the last one counts, as in most commands.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string workloads, max_keys, rtts, peers;
  std::optional<std::string> out_dir, root;
  app.add_option("--connect", options.connect);
  app.add_option("--workloads", workloads);
  app.add_option("--out", out_dir);
  app.add_option("--root", root);
  app.add_option("--max-keys", max_keys);
  app.add_option("--rtt", rtts);
  app.add_option("--peers", peers);
  app.add_flag("--quick", options.quick)->disable_flag_override();
  app.add_flag("--json", options.json)->disable_flag_override();
  app.add_flag("--strict", options.strict)->disable_flag_override();
  app.add_flag("--no-lock", options.no_lock)->disable_flag_override();
  app.add_flag("-h,--help", options.help)->disable_flag_override();
  // CLI11 reads "--root=" as "--root" with its value still to come, and
  // takes the next word: an empty value is no value. (And "--quick=" as the
  // flag: whatever was meant, it was not that.)
  for (const auto& arg : args) {
    if (arg.size() < 4 || !arg.starts_with("--") || !arg.ends_with("=")) continue;
    const std::string name = arg.substr(0, arg.size() - 1);
    if (const auto* option = app.get_option_no_throw(name))
      throw UsageError(
          name + (option->get_disable_flag_override() ? " takes no value" : " needs a value"));
  }
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 names the option first: "--out: 1 required ...", "quick was
    // given a disallowed flag override".
    const std::string what = e.what();
    const auto begin = what.find_first_not_of('-');
    const std::string name = "--" + what.substr(begin, what.find_first_of(": ", begin) - begin);
    const auto* option = app.get_option_no_throw(name);
    if (option == nullptr) throw UsageError(what);
    throw UsageError(name +
                     (option->get_disable_flag_override() ? " takes no value" : " needs a value"));
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  if (const auto rest = app.remaining(); !rest.empty())
    throw UsageError("unknown option '" + rest.front() + "' (see --help)");
  options.workloads = app.count("--workloads") != 0 ? parse_workloads(workloads) : kAllWorkloads;
  if (out_dir) {
    if (out_dir->empty()) throw UsageError("--out needs a directory");
    options.out_dir = out_dir;
  }
  if (root) {
    if (root->size() < 2 || root->front() != '/' || root->back() == '/')
      throw UsageError("--root needs an absolute znode path other than / (got '" + *root + "')");
    options.root = *root;
  }
  if (app.count("--max-keys") != 0) options.max_keys = parse_count("--max-keys", max_keys);
  if (app.count("--rtt") != 0) options.rtts_ms = parse_rtts(rtts);
  if (app.count("--peers") != 0) {
    if (peers != "curator") throw UsageError("--peers knows only 'curator' (got '" + peers + "')");
    options.curator = true;
  }
  if (!options.help && options.connect.empty())
    throw UsageError("no ensemble: give --connect HOSTS or set ZK_CONNECT");
  return options;
}

Plan make_plan(const Options& options) {
  using std::chrono::milliseconds;
  Plan plan;
  if (options.quick) {
    plan = Plan{milliseconds(1000),
                milliseconds(2000),
                8,
                {100, 300, 1000},
                8,
                4,
                milliseconds(5000),
                {0, 100, 1000},
                milliseconds(200),
                milliseconds(500),
                milliseconds(3000),
                30,
                100,
                {0, 2, 10},
                30,
                milliseconds(3000)};
  } else {
    plan = Plan{milliseconds(10000),
                milliseconds(15000),
                8,
                {1000, 10000, 100000},
                16,
                8,
                milliseconds(5000),
                {0, 1000, 10000, 100000, 1000000},
                milliseconds(2000),
                milliseconds(4000),
                milliseconds(30000),
                300,
                2000,
                {0, 10, 100, 1000},
                1000,
                milliseconds(15000)};
  }
  // W1 and W2 at added round trips: 0, 1 and 5 ms in a full run; in a quick
  // one only when asked.
  plan.rtts_ms = options.rtts_ms.value_or(options.quick ? std::vector<double>{0}
                                                        : std::vector<double>{0, 1, 5});
  // W8: 1,000 keys x 10 waiters; 200 waiters when quick, so that
  // the quick run stays well within its minute.
  if (options.quick) {
    plan.w8_keys = 50;
    plan.w8_waiters_per_key = 4;
  }
  // W9: failovers of 3 participants, a few seconds either way.
  plan.w9_rounds = options.quick ? 10 : 100;
  plan.w9_duration = milliseconds(options.quick ? 3000 : 30000);
  plan.w9_kill_rounds = options.quick ? 1 : 5;
  // W10: 8 sessions adding to one counter, a few seconds either way.
  plan.w10_adds_per_worker = options.quick ? 50 : 2000;
  plan.w10_duration = milliseconds(options.quick ? 3000 : 20000);
  plan.w10_changes = options.quick ? 100 : 1000;
  plan.w10_cache_rounds = options.quick ? 2 : 5;
  std::erase_if(plan.w4_keys, [&](std::uint64_t n) { return n > options.max_keys; });
  if (plan.w4_keys.empty() || plan.w4_keys.back() < options.max_keys)
    if (options.max_keys < (options.quick ? 1000u : 1000000u))
      plan.w4_keys.push_back(options.max_keys);
  return plan;
}

std::string usage_text() {
  return R"(Usage: zkr bench [OPTIONS]      (also: zkr-bench [OPTIONS])

Benchmarks of the zkrecipes locks against a ZooKeeper ensemble, each also
measured as a ratio to the "floor": the bare lock protocol (create
ephemeral-sequential, list, delete) with synchronous ZooKeeper C client calls.

Workloads:
  W1  uncontended: one session acquires and releases one lock (~10 s)
  W2  contended: 8 workers, each with its own session, on one lock, in three
      interleaved rounds of the floor's lock, Curator's (with --peers) and
      ours (~15 s each in all): acquisitions/s, wait and
      hand-off p50/p99, fairness; each holder does a read-modify-write of a
      counter only the lock protects, judged by the exclusion checker
      (overlaps, token order, lost updates)
  W3  many distinct locks: K = 1,000, 10,000, 100,000 keys in sequence:
      cycles/s, server znode count (mntr) before, right after and 5 s after,
      leftover znodes, the client's peak RSS
  W4  cost as znodes grow: cycle latency with N = 0 .. 1,000,000 other (empty)
      lock keys under the same root, flat and hashed layouts; time to list and
      to clean the root at each N
  W5  queue depth: hand-off latency with N = 0, 10, 100, 1,000 waiters queued
      behind the contender receiving the lock (judged like W2)
  W6  read-mostly: 8 sessions on one InterProcessReadWriteLock, one hold in
      five writes; throughput, readers at once, writer wait p99 (judged like
      W2, readers sharing)
  W7  a semaphore of 4 leases with 16 sessions (throughput, holders at once,
      fairness); then NonReentrantMutex and InterProcessSemaphoreMutex,
      with 1 and 8 sessions each: requests and writes per acquisition
  W8  many waiters: 10 queued on each of 1,000 keys, all granted in turn,
      first as 10,000 coroutines on one Asio thread (async_acquire_guard),
      then as 10,000 threads in the blocking acquire: threads and RSS added
      while queued, hand-off p50/p99, time until all are granted
  W9  leader failover: 3 participants, each on its own session, on one
      LeaderLatch; the leader closes once the others are queued (100 times,
      30 s at most): time from close() to the next leader's term, p50/p99,
      quorum writes per election, one leader at a time; then 5 kills: the
      leader's link cut (its session of 2 s abandoned, as by SIGKILL), the
      time to the next term and its ratio to the session timeout
  W10 counter adds: 8 sessions, each adding 1 to one DistributedAtomicLong
      (2,000 adds each, 20 s at most; RetryNTimes(100, 0 ms)): adds/s,
      p50/p99 per add, version conflicts per add, and the final value
      checked against the adds that succeeded; then cache convergence: a
      ChildrenCache on a group while another session makes 1,000 member
      changes (ephemeral children of 20 names created, set, deleted), 5
      rounds: time from the last change's reply until the cache holds the
      final members, the cache's requests per change, and its view checked
      against the servers' tree

Every workload also shows requests and writes per operation, counted by the
servers (mntr's zk_packets_received over every server, the leader's zxid from
srvr), and the run says whether the servers fsync (forceSync).

Options:
  --connect HOSTS     ensemble, host:port,... (default: $ZK_CONNECT)
  --workloads LIST    which to run, e.g. W1,W3 (default: all; the floor always runs)
  --quick             tiny sizes and durations: a smoke test (well under a minute)
  --max-keys N        cap W4's N (default 1000000)
  --rtt LIST          also run W1 and W2 with this much round-trip latency added,
                      in ms, through a delay proxy in front of each server
                      (default 0,1,5; with --quick, 0)
  --root PATH         znode under which everything is made (default /zkr-bench);
                      must be empty or absent, or hold only what a sweep may
                      remove (empty directories, orphaned lock nodes)
  --json              one JSON object per run on stdout; the table goes to stderr
  --out DIR           also write results.jsonl, results.txt and PNG plots there
  --strict            a missed performance target also makes the exit code 1
  --peers curator     Apache Curator's recipes (Java, Debian's 5.4 jars,
                      compiled with javac at the start) run beside the floor
                      and ours: InterProcessMutex in W1, W2, W3 and W5,
                      InterProcessReadWriteLock in W6, InterProcessSemaphoreV2
                      and NonReentrantMutex in W7, LeaderLatch in W9,
                      DistributedAtomicLong and CuratorCache in W10 (W1 in interleaved
                      slices; W2, W6 and W7 in interleaved rounds; the
                      others one after the other)
  --no-lock           W2 and W5 run their critical sections without the lock:
                      the control of the exclusion checks, which must report
                      overlaps and lost updates (and so exit 1)
  -h, --help          this help

Exit codes: 0 ran and every check held; 1 a check failed (a mutual-exclusion
violation, znodes left behind by W3) or, with --strict, a target was missed;
2 bad usage; 3 the run failed (ensemble unreachable, an error mid-run).
Mntr znode counts need the servers on 127.0.0.1 with the mntr 4-letter word
allowed. Progress goes to stderr; ZKR_LOG_LEVEL sets the library's log level.
)";
}

}  // namespace zkr::bench
