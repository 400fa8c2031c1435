// Our locks against Apache Curator's InterProcessMutex on the live ensemble.
//
// zkr/lock.hpp claims Curator's node names and queue order, so that a C++
// service and a Java service exclude each other on the same lock path. Here a
// real Curator (Debian's 5.4.0 jars) takes part: tests/interop/CuratorLockPeer.java
// runs as a child process and is driven one command per line over a socket
// pair that is its stdin and stdout. It is compiled with javac when a test
// first needs it, so the build needs no Java: once per build tree, into the
// directory ZKR_PEER_CACHE_DIR names, not once per test process (ctest runs
// each test in a process of its own, and javac costs four seconds of a core).
//
// Skips only when javac, java or the jars are missing; scripts/setup installs
// and checks them, and under CI a skip fails the run (scripts/check-skips).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "counter_write.hpp"
#include "lock_driver.hpp"
#include "support/child_process.hpp"
#include "support/ensemble.hpp"
#include "support/peer_replies.hpp"
#include "support/waits.hpp"
#include "zkr/distributed_atomic_long.hpp"
#include "zkr/group_member.hpp"
#include "zkr/leader_latch.hpp"
#include "zkr/leader_selector.hpp"
#include "zkr/lock.hpp"
#include "zkr/path.hpp"
#include "zkr/read_write_lock.hpp"
#include "zkr/semaphore.hpp"
#include "zkr/shared_count.hpp"

#ifndef ZKR_INTEROP_DIR
#error \
    "ZKR_INTEROP_DIR must name tests/interop, where CuratorLockPeer.java is (tests/CMakeLists.txt)"
#endif
#ifndef ZKR_PEER_CACHE_DIR
#error "ZKR_PEER_CACHE_DIR must name where the compiled peer is kept (tests/CMakeLists.txt)"
#endif

extern char** environ;

namespace zkr {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using test::acquired_node;
using test::kWait;
constexpr auto kCompileTimeout = 180s;  // javac on two busy cores

std::string ms(milliseconds d) { return std::to_string(d.count()); }

// ---------------------------------------------------------------- the peer --

// Debian's jars. These are all the classes a lock client loads (checked with
// java -verbose:class); the jars' manifests name more (jackson, netty, jetty),
// which the JVM adds if present and a lock client never touches.
const std::filesystem::path kJarDir = "/usr/share/java";
const std::vector<std::string> kJars = {"curator-recipes.jar", "curator-framework.jar",
                                        "curator-client.jar",  "zookeeper.jar",
                                        "zookeeper-jute.jar",  "guava.jar",
                                        "slf4j-api.jar"};
// Optional: it silences Curator's and ZooKeeper's logs. Without it slf4j
// warns once on stderr; stdout stays clean either way (see the peer).
const std::string kQuietLogging = "slf4j-nop.jar";

// The program's path in PATH, or "".
std::string find_program(const std::string& name) {
  const char* path = ::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The peer, compiled once per build tree.
struct PeerBuild {
  std::string skip;   // set: the peer cannot be built here, the tests skip
  std::string error;  // set: javac failed, the tests fail
  std::string java;
  std::string classpath;
};

// FNV-1a, 64 bits: names the compiled peer after what it was compiled from.
std::uint64_t fnv1a(std::string_view text, std::uint64_t hash = 14695981039346656037ull) {
  for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// Compiles the peer into `into`, a fresh directory; "" or what went wrong.
std::string compile_peer(const std::string& javac, const std::string& jars,
                         const std::string& source, const std::string& into) {
  // -Xlint:-path: the manifests name jars Debian may not ship (jline).
  test::ChildProcess javac_run({javac, "-Xlint:all,-path", "-d", into, "-cp", jars, source});
  const auto status = javac_run.wait_until(Clock::now() + kCompileTimeout);
  if (!status) {
    javac_run.kill();
    return "javac took longer than " + std::to_string(kCompileTimeout.count()) + " s";
  }
  if (*status != 0)
    return "javac failed (" + test::describe_wait_status(*status) + "), see its output above";
  return "";
}

// The compiled peer's directory in the cache: found there, or compiled into
// a temporary directory and renamed into place, so that no process ever sees
// half of it. A file lock makes the other test processes that start meanwhile
// wait for the first compile instead of each running javac; the source's and
// the classpath's text name the directory, so a changed peer is compiled anew.
std::string cached_peer(const std::string& javac, const std::string& jars,
                        const std::string& source, std::string& error) {
  std::ifstream in(source, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.good() && !in.eof()) {
    error = "cannot read " + source;
    return "";
  }
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                static_cast<unsigned long long>(fnv1a(jars, fnv1a(text))));
  const std::filesystem::path cache = ZKR_PEER_CACHE_DIR;
  const auto classes = cache / ("CuratorLockPeer-" + std::string(key));
  const auto compiled = [&] { return std::filesystem::exists(classes / "CuratorLockPeer.class"); };
  if (compiled()) return classes.string();

  std::error_code failed;
  std::filesystem::create_directories(cache, failed);
  const int lock = ::open((cache / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (failed || lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    error = "cannot lock " + (cache / ".lock").string() + ": " +
            (failed ? failed.message() : std::system_category().message(errno));
    if (lock >= 0) ::close(lock);
    return "";
  }
  if (!compiled()) {
    std::string dir = (cache / "tmp-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) {
      error = "mkdtemp " + dir + ": " + std::system_category().message(errno);
    } else {
      error = compile_peer(javac, jars, source, dir);
      if (error.empty()) std::filesystem::rename(dir, classes, failed);
      if (error.empty() && failed)
        error = "rename to " + classes.string() + ": " + failed.message();
      std::filesystem::remove_all(dir, failed);  // left only when something failed
    }
  }
  ::close(lock);  // and with it the lock
  return error.empty() ? classes.string() : "";
}

void build_peer(PeerBuild& build) {
  const std::string javac = find_program("javac");
  build.java = find_program("java");
  if (javac.empty() || build.java.empty()) {
    build.skip = "javac or java not in PATH (scripts/setup installs default-jdk-headless)";
    return;
  }
  std::string jars;
  for (const auto& jar : kJars) {
    const auto path = kJarDir / jar;
    if (!std::filesystem::exists(path)) {
      build.skip = path.string() + " missing (scripts/setup installs the Curator jars)";
      return;
    }
    jars += path.string() + ":";
  }
  if (std::filesystem::exists(kJarDir / kQuietLogging))
    jars += (kJarDir / kQuietLogging).string() + ":";
  const auto classes =
      cached_peer(javac, jars, ZKR_INTEROP_DIR "/CuratorLockPeer.java", build.error);
  build.classpath = jars + classes;
}

const PeerBuild& peer_build() {
  static PeerBuild build;
  static std::once_flag once;
  std::call_once(once, [] { build_peer(build); });
  return build;
}

// One CuratorLockPeer process. A socket pair rather than two pipes: a write to
// a peer that died fails with EPIPE (MSG_NOSIGNAL) instead of killing the test
// with SIGPIPE.
class CuratorPeer {
 public:
  // What reply() returns when no line came.
  static constexpr std::string_view kNoReply = "(no reply in time)";
  static constexpr std::string_view kGone = "(peer closed its output)";

  CuratorPeer(const PeerBuild& build, const std::string& connect) {
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
      throw std::system_error(errno, std::system_category(), "socketpair");
    fd_ = ends[0];
    // dup2 clears close-on-exec on the copies: the peer keeps exactly 0 and 1.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, ends[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO);
    // A peer lives seconds: one GC thread and the JVM's quick compiler only
    // cost it less CPU than the defaults, on a machine the servers share.
    std::vector<std::string> argv = {
        build.java, "-Xmx128m",      "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-cp",      build.classpath, "CuratorLockPeer",  connect};
    std::vector<char*> args;
    for (auto& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    const int error = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(ends[1]);
    if (error != 0) {
      ::close(fd_);
      throw std::system_error(error, std::generic_category(), "posix_spawn " + build.java);
    }
  }

  // Ends the peer's input, so it closes its session (its lock nodes go at once)
  // and exits. Kills it if it does not exit in time, or at once if the test has
  // failed: it may be stuck in an acquire. Never throws.
  ~CuratorPeer() {
    ::shutdown(fd_, SHUT_WR);
    if (::testing::Test::HasFailure() || !drained(Clock::now() + 10s)) ::kill(pid_, SIGKILL);
    // It has closed its output (so it is exiting) or was killed: this is short.
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::close(fd_);
  }

  CuratorPeer(const CuratorPeer&) = delete;
  CuratorPeer& operator=(const CuratorPeer&) = delete;

  void send(const std::string& command) {
    const std::string line = command + "\n";
    for (std::size_t sent = 0; sent < line.size();) {
      const auto n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return;  // the peer is gone: reply() will say so
      sent += static_cast<std::size_t>(n);
    }
  }

  // The next line the peer wrote, or kNoReply / kGone.
  std::string reply(milliseconds timeout = kWait) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (const auto end = buffer_.find('\n'); end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return line;
      }
      switch (read_some(deadline)) {
        case Read::data: break;
        case Read::timeout: return std::string(kNoReply);
        case Read::eof: return std::string(kGone);
      }
    }
  }

  std::string call(const std::string& command, milliseconds timeout = kWait) {
    send(command);
    return reply(timeout);
  }

 private:
  enum class Read { data, timeout, eof };

  Read read_some(Clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
      pollfd ready{fd_, POLLIN, 0};
      const int polled = ::poll(&ready, 1, static_cast<int>(std::max(left, 0ms).count()));
      if (polled < 0 && errno == EINTR) continue;
      if (polled == 0) return Read::timeout;
      char chunk[4096];
      const auto n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Read::eof;
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return Read::data;
    }
  }

  // True once the peer has closed its output, false at the deadline.
  bool drained(Clock::time_point deadline) {
    for (;;) {
      switch (read_some(deadline)) {
        case Read::data: buffer_.clear(); break;
        case Read::timeout: return false;
        case Read::eof: return true;
      }
    }
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
};

// ---------------------------------------------------------------- fixtures --

std::string joined(const std::vector<std::string>& words) {
  std::string line;
  for (const auto& word : words) line += (line.empty() ? "" : " ") + word;
  return line;
}

// Curator's protected lock node: "_c_" + a lowercase random UUID + "-lock-" +
// the server's 10-digit sequence.
bool is_curator_lock_name(std::string_view name) {
  static const std::regex kName(
      "_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}");
  return std::regex_match(name.begin(), name.end(), kName);
}

class CuratorInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    const PeerBuild& build = peer_build();
    if (!build.skip.empty()) GTEST_SKIP() << "no Curator peer: " << build.skip;
    ASSERT_TRUE(build.error.empty()) << build.error;
    dir_ = test::unique_path("curator");
  }

  void TearDown() override {
    peers_.clear();  // each closes its session first: its nodes go at once
    if (!clients_.empty()) {
      auto& keeper = *clients_.front()->keeper();
      EXPECT_TRUE(test::wait_children(
          keeper, dir_, [](const auto& n) { return n.empty(); }, kWait))
          << "lock nodes left behind in " << dir_;
      (void)keeper.try_remove(dir_);
      for (const auto& path : also_remove_) (void)keeper.try_remove(path);
    }
    clients_.clear();
  }

  Client& client() {
    ClientOptions options;
    options.connect_string = test::connect_string();
    options.session_timeout = 6s;
    options.retry_policy = std::make_shared<ExponentialBackoffRetry>(50ms, 10, 1s);
    clients_.push_back(std::make_unique<Client>(options));
    EXPECT_TRUE(clients_.back()->block_until_connected(kWait));
    return *clients_.back();
  }

  // Started, not yet known to be ready: the first reply is "ready" once it has
  // a session. Starting several before reading lets their JVMs start together.
  CuratorPeer& peer() {
    peers_.push_back(std::make_unique<CuratorPeer>(peer_build(), test::connect_string()));
    return *peers_.back();
  }

  // The peer's writes go through its own server, ours may lag behind it: a
  // node the peer deleted before it answered can still show here. The sync
  // first lets our server catch up with everything the peer said it did.
  bool wait_queue_length(std::size_t n) {
    clients_.front()->keeper()->sync(dir_);
    return test::wait_children(
        *clients_.front()->keeper(), dir_, [n](const auto& names) { return names.size() == n; },
        kWait);
  }

  std::string dir_;
  std::vector<std::string> also_remove_;  // after the lock directory
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<CuratorPeer>> peers_;
};

template <class Lock>
class CuratorExclusionTest : public CuratorInteropTest {};

using LockTypes = ::testing::Types<InterProcessMutex, NonReentrantMutex>;
TYPED_TEST_SUITE(CuratorExclusionTest, LockTypes);

// ------------------------------------------------------------------- tests --

TYPED_TEST(CuratorExclusionTest, CuratorAndWeExcludeEachOther) {
  auto& java = this->peer();
  TypeParam lock(this->client(), this->dir_);
  ASSERT_EQ(java.reply(), "ready");

  const auto java_node = acquired_node(java.call("acquire " + this->dir_ + " " + ms(kWait)));
  ASSERT_FALSE(java_node.empty());
  EXPECT_FALSE(lock.try_acquire());
  EXPECT_FALSE(lock.try_acquire_for(300ms));
  EXPECT_EQ(lock.participant_nodes(), std::vector<std::string>{java_node});
  EXPECT_EQ(java.call("release"), "released");
  ASSERT_TRUE(lock.try_acquire_for(kWait));

  EXPECT_EQ(java.call("acquire " + this->dir_ + " 300"), "timeout");
  // Curator deleted its node before it answered: once our server has caught
  // up, only ours is left.
  this->clients_.front()->keeper()->sync(this->dir_);
  EXPECT_EQ(lock.participant_nodes(), std::vector<std::string>{lock.grant().node_path()});

  java.send("acquire " + this->dir_ + " " + ms(kWait));
  ASSERT_TRUE(this->wait_queue_length(2));
  EXPECT_TRUE(lock.release());
  EXPECT_FALSE(acquired_node(java.reply()).empty());
  EXPECT_EQ(java.call("release"), "released");
}

// C++ holds; Curator queues; a second C++ client queues after it. Releases must
// grant Curator, then the second client: one fair queue across both libraries.
TYPED_TEST(CuratorExclusionTest, OneFifoQueueAcrossLibraries) {
  auto& java = this->peer();
  auto& observer = this->peer();  // Curator's view of the queue, while `java` waits
  TypeParam first(this->client(), this->dir_);
  TypeParam second(this->client(), this->dir_);
  ASSERT_EQ(java.reply(), "ready");
  ASSERT_EQ(observer.reply(), "ready");

  ASSERT_TRUE(first.try_acquire());
  java.send("acquire " + this->dir_ + " " + ms(kWait));
  ASSERT_TRUE(this->wait_queue_length(2));

  // The second client's thread acquires and releases (a reentrant mutex is
  // released by the thread that holds it), noting the queue it saw when granted.
  // Joined on every return: by then its acquire has succeeded or timed out.
  test::Latch granted;
  std::string second_node;
  std::vector<std::string> queue_at_grant;
  std::jthread waiter([&] {
    if (!second.try_acquire_for(kWait)) return;
    second_node = second.grant().node_path();
    queue_at_grant = second.participant_nodes();
    granted.open();
    second.release();
  });
  ASSERT_TRUE(this->wait_queue_length(3));
  const auto queue = first.participant_nodes();
  ASSERT_EQ(queue.size(), 3u);
  const std::string java_node = queue[1];
  EXPECT_EQ(queue[0], first.grant().node_path());
  for (const auto& node : queue) EXPECT_TRUE(is_curator_lock_name(node_name(node))) << node;
  EXPECT_EQ(observer.call("participants " + this->dir_), "participants " + joined(queue))
      << "Curator and we see a different queue";

  EXPECT_TRUE(first.release());
  EXPECT_EQ(acquired_node(java.reply()), java_node) << "the grant skipped Curator";
  EXPECT_FALSE(granted.is_open()) << "granted while Curator holds the lock";
  EXPECT_EQ(java.call("release"), "released");
  EXPECT_TRUE(granted.wait(kWait));
  waiter.join();
  EXPECT_EQ(second_node, queue.back());
  EXPECT_EQ(queue_at_grant, std::vector<std::string>{second_node})
      << "granted before Curator released";
}

// Curator's nodes and ours have the same form and share the directory's one
// sequence counter.
TEST_F(CuratorInteropTest, BothCreateCuratorNamesInOneSequence) {
  auto& java = peer();
  auto& c = client();
  // Our releases would remove the empty directory, and a directory made
  // again counts from 0: keep it, to see the one counter.
  LockOptions keep;
  keep.remove_directory_on_release = false;
  InterProcessMutex mutex(c, dir_, keep);
  NonReentrantMutex semaphore_mutex(c, dir_, keep);
  ASSERT_EQ(java.reply(), "ready");

  const auto java_node = acquired_node(java.call("acquire " + dir_ + " " + ms(kWait)));
  ASSERT_FALSE(java_node.empty());
  EXPECT_EQ(parent_path(java_node), dir_);
  EXPECT_EQ(java.call("release"), "released");
  ASSERT_TRUE(mutex.try_acquire_for(kWait));
  const auto mutex_node = mutex.grant().node_path();
  mutex.release();
  ASSERT_TRUE(semaphore_mutex.try_acquire_for(kWait));
  const auto semaphore_node = semaphore_mutex.grant().node_path();
  semaphore_mutex.release();

  std::vector<std::int64_t> sequences;
  for (const auto& node : {java_node, mutex_node, semaphore_node}) {
    const auto name = node_name(node);
    EXPECT_TRUE(is_curator_lock_name(name)) << node;
    EXPECT_EQ(parent_path(node), dir_);
    sequences.push_back(detail::lock_sequence(name).value_or(-1));
  }
  // One counter for the directory, whoever creates.
  EXPECT_LT(sequences[0], sequences[1]);
  EXPECT_LT(sequences[1], sequences[2]);
}

// Curator's own sort (LockInternals.getSortedChildren, as its lock loop calls
// it) and ours agree on names as the server makes them, whatever the GUIDs and
// however many digits the sequence really needs.
TEST_F(CuratorInteropTest, SortsLockNamesAsCuratorDoes) {
  auto& java = peer();
  ASSERT_EQ(java.reply(), "ready");
  const std::vector<std::string> sequences = {"0000000010", "0000000009", "2147483647",
                                              "0000000000", "0000000100", "1000000000",
                                              "0000000099", "0999999999", "0000000001"};
  // A fresh GUID each: the order must come from the sequences alone.
  std::vector<std::string> names;
  for (const auto& sequence : sequences)
    names.push_back(detail::protected_lock_prefix(detail::new_guid()) + sequence);
  EXPECT_EQ(java.call("sort " + joined(names)),
            "sorted " + joined(detail::sorted_lock_nodes(names)));
}

// Names as the server makes them once the directory's sequence counter has
// passed 2^31: ZooKeeper's PrepRequestProcessor appends
// String.format(Locale.ENGLISH, "%010d", cversion) of an int (javap -c -p on
// the 3.8.0 jar), so "-000000001", "-2147483648". C's "%010d" writes the same.
std::string server_sequence(std::int32_t cversion) {
  char text[16];
  std::snprintf(text, sizeof text, "%010d", cversion);
  return text;
}

// Past the wrap Curator's order (the suffixes as text, '-' before every
// digit) is not the order the counter issued the names in: it puts the
// newest negative first, before the holder issued 2^31-1. No order can agree
// with a Curator peer there and be right, so our locks refuse to queue past
// the wrap (lock_wrap_test); our sort is the issue order, for listings.
// Curator's order is read from Curator's own sort, not from our reading of it.
TEST_F(CuratorInteropTest, PastTheCounterWrapCuratorsOrderIsNotTheIssueOrder) {
  auto& java = peer();
  ASSERT_EQ(java.reply(), "ready");
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const std::vector<std::int32_t> cversions = {
      kMax - 1, kMin, -1, kMax, 0, -1000, kMin + 1, -999999999, -1000000000, 7, -2, kMin + 2};
  std::vector<std::string> names;
  for (const auto cversion : cversions)
    names.push_back(detail::protected_lock_prefix(detail::new_guid()) + server_sequence(cversion));

  const auto ours = detail::sorted_lock_nodes(names);
  ASSERT_EQ(ours.size(), names.size()) << "we dropped a name with a negative sequence";
  auto by_issue = names;
  std::sort(by_issue.begin(), by_issue.end(), [](const auto& x, const auto& y) {
    return detail::unwrapped_sequence(*detail::lock_sequence(x)) <
           detail::unwrapped_sequence(*detail::lock_sequence(y));
  });
  EXPECT_EQ(ours, by_issue);
  const auto curators = java.call("sort " + joined(names));
  EXPECT_NE(curators, "sorted " + joined(ours));
  // Curator's first is -1, the newest name issued ("-000000001").
  EXPECT_TRUE(curators.starts_with("sorted " + names[2])) << curators;
}

// Two Curator peers and two of our clients (one of each lock type) take the
// lock 50 times each and, holding it, append their library's letter to a
// counter znode with a get and an unversioned set. Any overlap of two holders
// would lose a letter. The letters also show the order of the holds: the two
// libraries must have handed the lock to each other at least kInterleavings
// times, or the test proved nothing about them excluding each other.
TEST_F(CuratorInteropTest, SharedCounterLosesNoIncrement) {
  constexpr int kEach = 50;
  // All four queue behind a gate before the first hold, and the queue is FIFO
  // in both libraries: holds then come round in turn, and every round of four
  // changes library at least twice (about 100 in all). 20 leaves room for a
  // holder slow to queue again, and is far above what one library running
  // its 100 holds before the other would give (1).
  constexpr int kInterleavings = 20;
  const std::string counter = dir_ + "-counter";
  auto& java_a = peer();
  auto& java_b = peer();
  Client& c1 = client();
  Client& c2 = client();
  Client& gate_client = client();
  c1.keeper()->create(counter, "");
  also_remove_.push_back(counter);
  ASSERT_EQ(java_a.reply(), "ready");
  ASSERT_EQ(java_b.reply(), "ready");

  InterProcessMutex gate(gate_client, dir_);
  ASSERT_TRUE(gate.try_acquire_for(kWait));
  const std::string count =
      "count " + dir_ + " " + counter + " " + std::to_string(kEach) + " " + ms(kWait);
  java_a.send(count + " j");
  java_b.send(count + " j");
  // On a thread of its own: an exception must become a failure, not terminate.
  auto run = [&](auto& lock, Keeper& keeper) {
    try {
      for (int i = 0; i < kEach; ++i) {
        if (!lock.try_acquire_for(kWait)) {
          ADD_FAILURE() << "no grant within " << kWait.count() << " s at " << i;
          return;
        }
        keeper.set(counter, keeper.get(counter).data + "c");
        lock.release();
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  };
  InterProcessMutex mutex(c1, dir_);
  NonReentrantMutex semaphore_mutex(c2, dir_);
  {
    std::jthread ours_a([&] { run(mutex, *c1.keeper()); });
    std::jthread ours_b([&] { run(semaphore_mutex, *c2.keeper()); });
    EXPECT_TRUE(wait_queue_length(5)) << "the four did not all queue behind the gate";
    EXPECT_TRUE(gate.release());
  }
  EXPECT_EQ(java_a.reply(), "counted " + std::to_string(kEach));
  EXPECT_EQ(java_b.reply(), "counted " + std::to_string(kEach));

  // Curator's last marks may not have reached our server yet.
  c1.keeper()->sync(counter);
  const std::string marks = c1.keeper()->get(counter).data;
  EXPECT_EQ(marks.size(), 4u * kEach) << "lost updates: " << marks;
  EXPECT_EQ(std::count(marks.begin(), marks.end(), 'j'), 2 * kEach) << marks;
  EXPECT_EQ(std::count(marks.begin(), marks.end(), 'c'), 2 * kEach) << marks;
  int interleavings = 0;
  for (std::size_t i = 1; i < marks.size(); ++i) interleavings += marks[i] != marks[i - 1];
  EXPECT_GE(interleavings, kInterleavings) << "holds in order: " << marks;
  RecordProperty("interleavings", interleavings);
}

// ------------------------------------------------------------ counters --
//
// Curator's DistributedAtomicLong and SharedCount and ours on one path: adds
// from both at once, none lost, and each side reads every value the other
// wrote (the encodings agree). Ours start once Curator's first add of a round
// is on the servers and make fewer adds, so that they run among Curator's;
// refused conditional writes show that the two did race.

constexpr int kJavaAdds = 300;
constexpr int kOurAdds = 60;
constexpr int kRoundAdds = kJavaAdds + kOurAdds;
// Adds race only where they overlap in time. A round can miss: a server
// stalled for one client, or a process starved on a busy machine, lets one
// side's adds run before the other's. More rounds follow until one shows a
// refused write; none in all of them fails the test.
constexpr int kMaxRounds = 4;

struct Races {
  int rounds = 0;
  std::int64_t refused_writes = 0;
};

// Runs `round` (Curator's adds and ours, kRoundAdds in all; false if it
// failed) until the servers' zxids show a refused write within one, at most
// kMaxRounds times. Each write, refused or not, takes one zxid.
template <class Round>
Races race_in_rounds(Keeper& keeper, const std::string& dir, Round round) {
  Races races;
  while (races.refused_writes == 0 && races.rounds < kMaxRounds) {
    ++races.rounds;
    const auto first_zxid = test::next_zxid(keeper, dir);
    if (!round()) break;
    const auto last_zxid = test::next_zxid(keeper, dir);
    races.refused_writes =
        (last_zxid - first_zxid - 1) - kRoundAdds - 1;  // less the probe's delete
  }
  return races;
}

// Waits until Curator's first add of a round shows in `counter`: its value,
// as `decode` reads it, past the value `before` the round.
template <class Decode>
bool curators_adds_began(Keeper& keeper, const std::string& counter, std::int64_t before,
                         Decode decode) {
  return test::wait_node(
      keeper, counter,
      [&](const std::optional<NodeData>& n) { return n && decode(counter, n->data) > before; },
      kWait);
}

TEST_F(CuratorInteropTest, AtomicLongAddsFromBothLibrariesAllCount) {
  const std::string counter = dir_ + "-along";
  also_remove_.push_back(counter);
  auto& java = peer();
  Client& ours = client();
  ASSERT_EQ(java.reply(), "ready");
  auto& keeper = *ours.keeper();
  keeper.create(dir_);
  DistributedAtomicLongOptions options;
  options.retry_policy = std::make_shared<RetryUntilElapsed>(60s, 1ms);
  DistributedAtomicLong along(ours, counter, options);
  ASSERT_TRUE(along.initialize(0));
  std::int64_t expected = 0;
  const Races races = race_in_rounds(keeper, dir_, [&] {
    java.send("along-add " + counter + " " + std::to_string(kJavaAdds) + " 1");
    const bool curator_began = curators_adds_began(keeper, counter, expected, detail::decode_int64);
    int succeeded = 0;
    for (int i = 0; curator_began && i < kOurAdds; ++i) {
      succeeded += along.increment().succeeded() ? 1 : 0;
    }
    EXPECT_TRUE(curator_began) << "Curator's first add never reached the servers";
    EXPECT_EQ(succeeded, kOurAdds);
    EXPECT_EQ(java.reply(), "along-added " + std::to_string(kJavaAdds));
    expected += kRoundAdds;
    keeper.sync(counter);
    EXPECT_EQ(along.get(), expected);
    EXPECT_EQ(java.call("along-get " + counter), "along " + std::to_string(expected));
    return !HasFailure();
  });
  ASSERT_FALSE(HasFailure());
  RecordProperty("rounds", races.rounds);
  RecordProperty("lost_races", static_cast<int>(races.refused_writes));
  EXPECT_GT(races.refused_writes, 0)
      << "Curator's adds and ours never raced in " << races.rounds << " rounds";
  // Turn about, each reads the value the other wrote, negative ones and
  // ones past 32 bits too.
  for (int round = 0; round < 5; ++round) {
    const std::int64_t theirs = round % 2 ? 1000 : -1000;
    EXPECT_EQ(java.call("along-add " + counter + " 1 " + std::to_string(theirs)), "along-added 1");
    expected += theirs;
    keeper.sync(counter);
    EXPECT_EQ(along.get(), expected);
    const std::int64_t mine = (round % 2 ? 1 : -1) * (std::int64_t{1} << (36 + round));
    ASSERT_TRUE(along.add(mine).succeeded());
    expected += mine;
    EXPECT_EQ(java.call("along-get " + counter), "along " + std::to_string(expected));
  }
}

TEST_F(CuratorInteropTest, SharedCountAddsFromBothLibrariesAllCount) {
  const std::string counter = dir_ + "-count";
  also_remove_.push_back(counter);
  auto& java = peer();
  Client& ours = client();
  ASSERT_EQ(java.reply(), "ready");
  auto& keeper = *ours.keeper();
  keeper.create(dir_);
  SharedCount count(ours, counter, 0);
  count.start();
  int expected = 0;
  int conflicts = 0;  // ours refused, read again and went again
  const Races races = race_in_rounds(keeper, dir_, [&] {
    java.send("count-add " + counter + " " + std::to_string(kJavaAdds) + " 1");
    const bool curator_began = curators_adds_began(keeper, counter, expected, detail::decode_int32);
    EXPECT_TRUE(curator_began) << "Curator's first add never reached the servers";
    for (int i = 0; curator_began && i < kOurAdds; ++i) {
      for (;;) {
        const auto seen = count.get_versioned_count();
        const auto outcome = count.try_set_count(seen, seen.value + 1);
        if (outcome == CounterOutcome::succeeded) break;
        if (outcome != CounterOutcome::conflict) {
          ADD_FAILURE() << "no faults here, yet an add ended " << to_string(outcome);
          break;
        }
        ++conflicts;
      }
    }
    EXPECT_EQ(java.reply(), "count-added " + std::to_string(kJavaAdds));
    expected += kRoundAdds;
    keeper.sync(counter);
    EXPECT_EQ(keeper.get(counter).data, detail::encode_int32(expected));
    EXPECT_EQ(java.call("count-get " + counter), "count " + std::to_string(expected));
    return !HasFailure();
  });
  ASSERT_FALSE(HasFailure());
  RecordProperty("rounds", races.rounds);
  RecordProperty("conflicts", conflicts);
  RecordProperty("lost_races", static_cast<int>(races.refused_writes));
  EXPECT_GT(races.refused_writes, 0)
      << "Curator's adds and ours never raced in " << races.rounds << " rounds";
  test::Latch heard;
  count.add_listener([&](VersionedCount c) {
    if (c.value == expected - 500) heard.open();
  });
  EXPECT_EQ(java.call("count-add " + counter + " 1 -500"), "count-added 1");
  EXPECT_TRUE(heard.wait(kWait)) << "our SharedCount never heard Curator's write: "
                                 << count.get_count();
  EXPECT_EQ(count.get_count(), expected - 500);
}

// ------------------------------------------------------- no silent mix --
//
// Curator's InterProcessSemaphoreMutex and InterProcessReadWriteLock keep
// nodes our queue does not count (zkr/lock.hpp, "No silent mix"): our locks
// must refuse a path one of them uses, leaving nothing. The layouts asserted
// here are the ones the detection was written from.

template <class Lock>
class CuratorMixTest : public CuratorInteropTest {
 protected:
  std::vector<std::string> children() {
    auto& keeper = *clients_.front()->keeper();
    keeper.sync(dir_);  // Curator's creates may not have reached our server yet
    auto names = keeper.children(dir_).names;
    std::sort(names.begin(), names.end());
    return names;
  }
};
TYPED_TEST_SUITE(CuratorMixTest, LockTypes);

// Our acquire must be refused: the error's text, or "" (and a failure).
template <class Lock>
std::string refused_beside_curator(Lock& lock, const std::string& dir) {
  try {
    const bool granted = lock.try_acquire_for(5s);
    ADD_FAILURE() << (granted ? "granted beside Curator" : "not granted, but not refused either");
    if (granted) lock.release();
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol) << e.what();
    EXPECT_EQ(e.path(), dir);
    return e.what();
  }
  return "";
}

// Curator's semaphore leaves its two containers; the server would reap them
// within a second (scripts/ensemble), the directory's removal must not wait.
void remove_semaphore_leftovers(Keeper& keeper, const std::string& dir) {
  for (const char* child : {"/leases", "/locks"}) (void)keeper.try_remove(dir + child);
}

TYPED_TEST(CuratorMixTest, CuratorSemaphoreMutexHoldingRefusesOurs) {
  auto& java = this->peer();
  TypeParam lock(this->client(), this->dir_);
  ASSERT_EQ(java.reply(), "ready");
  ASSERT_EQ(java.call("semaphore-mutex " + this->dir_ + " " + ms(kWait)), "acquired");
  auto& keeper = *this->clients_.front()->keeper();
  // Its two containers; "locks" (its internal mutex, let go once granted) may
  // already be reaped.
  auto layout = this->children();
  std::erase(layout, "locks");
  ASSERT_EQ(layout, std::vector<std::string>{"leases"});
  const auto leases = keeper.children(this->dir_ + "/leases").names;
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_TRUE(std::regex_match(leases[0], std::regex("_c_[0-9a-f-]{36}-lease-[0-9]{10}")))
      << leases[0];

  const auto text = refused_beside_curator(lock, this->dir_);
  EXPECT_NE(text.find("InterProcessSemaphoreV2/SemaphoreMutex of Curator or zkrecipes' Curator "
                      "layout (children "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("leases/)"), std::string::npos) << text;
  // "locks" is a container that Curator's internal mutex left empty once it
  // granted: the server may reap it at any moment.
  auto after = this->children();
  std::erase(after, "locks");
  EXPECT_EQ(after, std::vector<std::string>{"leases"}) << "our node was left";
  EXPECT_EQ(java.call("release"), "released");
  remove_semaphore_leftovers(keeper, this->dir_);
}

TYPED_TEST(CuratorMixTest, CuratorReadWriteLockHoldingRefusesOurs) {
  auto& java = this->peer();
  TypeParam lock(this->client(), this->dir_);
  ASSERT_EQ(java.reply(), "ready");
  for (const std::string kind : {"write", "read"}) {
    ASSERT_EQ(java.call(kind + "-lock " + this->dir_ + " " + ms(kWait)), "acquired");
    const auto nodes = this->children();
    ASSERT_EQ(nodes.size(), 1u);
    const std::string name = kind == "write" ? "__WRIT__" : "__READ__";
    EXPECT_TRUE(std::regex_match(nodes[0], std::regex("_c_[0-9a-f-]{36}-" + name + "[0-9]{10}")))
        << nodes[0];
    const auto text = refused_beside_curator(lock, this->dir_);
    EXPECT_NE(
        text.find("InterProcessReadWriteLock of Curator or zkrecipes (node " + nodes[0] + ")"),
        std::string::npos)
        << text;
    EXPECT_EQ(this->children(), nodes) << "our node was left";
    EXPECT_EQ(java.call("release"), "released");
  }
}

// The limit zkr/lock.hpp states: Curator's semaphore counts only leases/ and
// its read/write lock sorts our nodes after its own, so either is granted
// while ours holds, and we cannot stop it. What we can do: every acquire of
// ours from then on refuses. (If Curator ever waits for us here, the
// documentation is what must change.)
TEST_F(CuratorInteropTest, CuratorIsGrantedBesideOurHolderAndOurNextAcquireRefuses) {
  auto& java = peer();
  auto& c = client();
  InterProcessMutex held(c, dir_);
  NonReentrantMutex next(c, dir_);
  ASSERT_EQ(java.reply(), "ready");
  for (const std::string recipe : {"semaphore-mutex", "write-lock"}) {
    ASSERT_TRUE(held.try_acquire_for(kWait));
    EXPECT_EQ(java.call(recipe + " " + dir_ + " 5000"), "acquired") << recipe;
    EXPECT_FALSE(refused_beside_curator(next, dir_).empty()) << recipe;
    EXPECT_TRUE(held.grant().held()) << "our holder is not told: " << recipe;
    EXPECT_EQ(java.call("release"), "released");
    EXPECT_TRUE(held.release());
    remove_semaphore_leftovers(*c.keeper(), dir_);
  }
}

// ------------------------------------------------ the read/write lock --
//
// Ours and Curator's InterProcessReadWriteLock on one path: one queue, the
// same rules on both sides.

TEST_F(CuratorInteropTest, ReadWriteLocksShareAndExcludeAcrossLibraries) {
  auto& java = peer();
  InterProcessReadWriteLock ours(client(), dir_);
  ASSERT_EQ(java.reply(), "ready");
  // Curator reads: our reader shares it, our writer may not.
  ASSERT_EQ(java.call("read-lock " + dir_ + " " + ms(kWait)), "acquired");
  EXPECT_TRUE(ours.read_lock().try_acquire());
  EXPECT_TRUE(ours.read_lock().release());
  EXPECT_FALSE(ours.write_lock().try_acquire());
  EXPECT_EQ(java.call("release"), "released");
  // Curator writes: neither side of ours.
  ASSERT_EQ(java.call("write-lock " + dir_ + " " + ms(kWait)), "acquired");
  EXPECT_FALSE(ours.read_lock().try_acquire());
  EXPECT_FALSE(ours.write_lock().try_acquire());
  EXPECT_EQ(java.call("release"), "released");
  // We write: Curator gets neither side; we read: Curator reads, does not write.
  ASSERT_TRUE(ours.write_lock().try_acquire());
  EXPECT_EQ(java.call("read-lock " + dir_ + " 300"), "timeout");
  EXPECT_EQ(java.call("write-lock " + dir_ + " 300"), "timeout");
  EXPECT_TRUE(ours.write_lock().release());
  ASSERT_TRUE(ours.read_lock().try_acquire());
  EXPECT_EQ(java.call("read-lock " + dir_ + " " + ms(kWait)), "acquired");
  EXPECT_EQ(java.call("release"), "released");
  EXPECT_EQ(java.call("write-lock " + dir_ + " 300"), "timeout");
  EXPECT_TRUE(ours.read_lock().release());
}

// Fair across libraries: a Curator writer queued behind our reader holds back
// our next reader, and is granted when our reader lets go.
TEST_F(CuratorInteropTest, ACuratorWriterQueuedBehindOurReaderHoldsBackOurNextReader) {
  auto& java = peer();
  InterProcessReadWriteLock first(client(), dir_);
  InterProcessReadWriteLock later(client(), dir_);
  ASSERT_EQ(java.reply(), "ready");
  ASSERT_TRUE(first.read_lock().try_acquire());
  java.send("write-lock " + dir_ + " " + ms(kWait));
  ASSERT_TRUE(wait_queue_length(2));
  EXPECT_FALSE(later.read_lock().try_acquire());
  EXPECT_TRUE(first.read_lock().release());
  EXPECT_EQ(java.reply(), "acquired");
  EXPECT_FALSE(later.read_lock().try_acquire());
  EXPECT_EQ(java.call("release"), "released");
  EXPECT_TRUE(later.read_lock().try_acquire_for(kWait));
  EXPECT_TRUE(later.read_lock().release());
}

// Two Curator processes and two of ours, each mixing write holds (appending
// a mark to a counter: a lost update loses a mark) with read holds (the
// counter must not change while a reader holds it).
TEST_F(CuratorInteropTest, ReadWriteCounterLosesNothingAndNoWriterRunsBesideAReader) {
  constexpr int kWrites = 30, kReads = 30;
  // Each of the four starts with a read, queued behind a write lock held as a
  // gate, so that neither library runs its holds before the other has begun
  // (once, on a loaded machine, ours ran all 60 while Curator loaded its
  // classes). From the gate on, writes are granted in queue order and come
  // round in turn: about one change of library per write. 10 leaves room for
  // a holder slow to queue again, and is far above the 1 that one library
  // running all its writes first would give.
  constexpr int kInterleavings = 10;
  const std::string counter = dir_ + "-counter";
  auto& java_a = peer();
  auto& java_b = peer();
  Client& c1 = client();
  Client& c2 = client();
  Client& gate_client = client();
  c1.keeper()->create(counter, "");
  also_remove_.push_back(counter);
  ASSERT_EQ(java_a.reply(), "ready");
  ASSERT_EQ(java_b.reply(), "ready");
  InterProcessReadWriteLock gate(gate_client, dir_);
  ASSERT_TRUE(gate.write_lock().try_acquire_for(kWait));
  const std::string command = "rw-count " + dir_ + " " + counter + " " + std::to_string(kWrites) +
                              " " + std::to_string(kReads) + " " + ms(kWait) + " j";
  java_a.send(command);
  java_b.send(command);
  std::atomic<int> overlaps{0};
  auto run = [&](Client& c) {
    try {
      InterProcessReadWriteLock lock(c, dir_);
      Keeper& keeper = *c.keeper();
      for (int i = 0; i < kWrites + kReads; ++i) {
        const bool write =
            (i + 1) * kWrites / (kWrites + kReads) > i * kWrites / (kWrites + kReads);
        auto& side = write ? lock.write_lock() : lock.read_lock();
        if (!side.try_acquire_for(kWait)) {
          ADD_FAILURE() << "no grant within " << kWait.count() << " s at " << i;
          return;
        }
        if (write) {
          keeper.set(counter, keeper.get(counter).data + "c");
        } else {
          keeper.sync(counter);
          const auto before = keeper.get(counter).data;
          keeper.sync(counter);
          if (keeper.get(counter).data != before) ++overlaps;
        }
        side.release();
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  };
  {
    std::jthread ours_a([&] { run(c1); });
    std::jthread ours_b([&] { run(c2); });
    EXPECT_TRUE(wait_queue_length(5)) << "the four did not all queue behind the gate";
    EXPECT_TRUE(gate.write_lock().release());
  }
  const std::string done =
      "rw-counted " + std::to_string(kWrites) + " " + std::to_string(kReads) + " 0";
  EXPECT_EQ(java_a.reply(), done) << "a Curator reader saw a write while it held";
  EXPECT_EQ(java_b.reply(), done) << "a Curator reader saw a write while it held";
  EXPECT_EQ(overlaps.load(), 0) << "one of our readers saw a write while it held";
  c1.keeper()->sync(counter);
  const std::string marks = c1.keeper()->get(counter).data;
  EXPECT_EQ(marks.size(), 4u * kWrites) << "lost updates: " << marks;
  EXPECT_EQ(std::count(marks.begin(), marks.end(), 'j'), 2 * kWrites) << marks;
  EXPECT_EQ(std::count(marks.begin(), marks.end(), 'c'), 2 * kWrites) << marks;
  int interleavings = 0;
  for (std::size_t i = 1; i < marks.size(); ++i) interleavings += marks[i] != marks[i - 1];
  EXPECT_GE(interleavings, kInterleavings) << "the libraries did not take turns: " << marks;
  RecordProperty("interleavings", interleavings);
}

// Our mutex and our read/write lock refuse each other's path, as they refuse
// Curator's (the unit tests hold the rest).
TEST_F(CuratorInteropTest, CuratorMutexHoldingRefusesOurReadWriteLock) {
  auto& java = peer();
  InterProcessReadWriteLock ours(client(), dir_);
  ASSERT_EQ(java.reply(), "ready");
  const auto node = java.call("acquire " + dir_ + " " + ms(kWait));
  ASSERT_TRUE(node.starts_with("acquired ")) << node;
  for (auto* side : {&ours.read_lock(), &ours.write_lock()}) {
    try {
      (void)side->try_acquire_for(5s);
      ADD_FAILURE() << "granted beside Curator's mutex";
    } catch (const KeeperError& e) {
      EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol) << e.what();
      EXPECT_NE(std::string(e.what()).find("a mutex, InterProcessMutex"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(wait_queue_length(1)) << "our node was left";
  EXPECT_EQ(java.call("release"), "released");
}

// ------------------------------------------------------ the semaphore --

// Two Curator processes and two of ours on one semaphore of 3 leases: each
// holder, once granted, puts a node in a holders directory and counts them
// (with a semaphore that lets 5 in, a run sees 4).
// More than 3 would be a broken bound; exactly 3 at some point shows the
// bound was reached, across the libraries.
TEST_F(CuratorInteropTest, SemaphoreLeasesNeverExceedTheBoundAcrossLibraries) {
  // Each holder looks kLooks times while it holds, so that holds overlap
  // long enough for a fourth holder, if the bound let one in, to be seen.
  // The four start behind a gate, a third client holding every lease, so
  // that all contend from the first hold on (once, on a loaded machine, ours
  // ran theirs while Curator loaded its classes, and the bound was never
  // reached): one contender waits in leases/ holding the internal mutex,
  // the other three queue on that mutex.
  constexpr int kMax = 3, kHolds = 25, kLooks = 5;
  const std::string holders = dir_ + "-holders";
  auto& java_a = peer();
  auto& java_b = peer();
  Client& c1 = client();
  Client& c2 = client();
  Client& gate_client = client();
  c1.keeper()->create(holders);
  also_remove_.push_back(holders);
  ASSERT_EQ(java_a.reply(), "ready");
  ASSERT_EQ(java_b.reply(), "ready");
  InterProcessSemaphoreV2 gate(gate_client, dir_, SemaphoreLimit::fixed(kMax));
  auto gate_leases = gate.try_acquire_for(kMax, kWait);
  ASSERT_EQ(gate_leases.size(), static_cast<std::size_t>(kMax));
  const std::string command = "lease-count " + dir_ + " " + std::to_string(kMax) + " " +
                              std::to_string(kHolds) + " " + ms(kWait) + " " + holders + " " +
                              std::to_string(kLooks);
  java_a.send(command);
  java_b.send(command);
  std::atomic<std::size_t> most{0};
  auto run = [&](Client& c) {
    try {
      InterProcessSemaphoreV2 semaphore(c, dir_, SemaphoreLimit::fixed(kMax));
      Keeper& keeper = *c.keeper();
      for (int i = 0; i < kHolds; ++i) {
        auto leases = semaphore.try_acquire_for(1, kWait);
        if (leases.empty()) {
          ADD_FAILURE() << "no lease within " << kWait.count() << " s at " << i;
          return;
        }
        const auto mine = keeper.create(holders + "/c-", "", CreateMode::ephemeral_sequential).path;
        for (int look = 0; look < kLooks; ++look) {
          keeper.sync(holders);
          const auto count = keeper.children(holders).names.size();
          for (auto seen = most.load(); count > seen && !most.compare_exchange_weak(seen, count);) {
          }
        }
        keeper.remove(mine);
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  };
  {
    std::jthread ours_a([&] { run(c1); });
    std::jthread ours_b([&] { run(c2); });
    EXPECT_TRUE(test::wait_children(
        *c1.keeper(), dir_ + "/locks", [](const auto& n) { return n.size() == 4; }, kWait))
        << "the four did not all queue behind the gate";
    for (auto& lease : gate_leases) EXPECT_TRUE(lease.release());
  }
  const auto java_most = [](const std::string& reply) {
    std::string word, holds, seen;
    std::istringstream in(reply);
    in >> word >> holds >> seen;
    return word == "lease-counted" ? std::stoi(seen) : -1;
  };
  const auto a = java_a.reply(), b = java_b.reply();
  ASSERT_GE(java_most(a), 1) << a;
  ASSERT_GE(java_most(b), 1) << b;
  const auto overall = std::max<std::size_t>({most.load(), static_cast<std::size_t>(java_most(a)),
                                              static_cast<std::size_t>(java_most(b))});
  EXPECT_LE(overall, static_cast<std::size_t>(kMax)) << "more holders than leases";
  EXPECT_EQ(overall, static_cast<std::size_t>(kMax))
      << "the bound was never reached: no contention";
  RecordProperty("most_holders", static_cast<int>(overall));
  EXPECT_TRUE(test::wait_children(
      *c1.keeper(), dir_ + "/leases", [](const auto& n) { return n.empty(); }, kWait));
  for (const char* child : {"/leases", "/locks"}) (void)c1.keeper()->try_remove(dir_ + child);
}

// Curator's InterProcessSemaphoreMutex and ours of its layout exclude each
// other; NonReentrantMutex of zkr/lock.hpp refuses that path.
TEST_F(CuratorInteropTest, CuratorSemaphoreMutexAndOursExcludeEachOther) {
  auto& java = peer();
  Client& c = client();
  InterProcessSemaphoreMutex ours(c, dir_);
  ASSERT_EQ(java.reply(), "ready");
  ASSERT_EQ(java.call("semaphore-mutex " + dir_ + " " + ms(kWait)), "acquired");
  EXPECT_FALSE(ours.try_acquire_for(300ms));
  EXPECT_EQ(java.call("release"), "released");
  ASSERT_TRUE(ours.try_acquire_for(kWait));
  EXPECT_EQ(java.call("semaphore-mutex " + dir_ + " 300"), "timeout");
  NonReentrantMutex queue_mutex(c, dir_);
  EXPECT_THROW((void)queue_mutex.try_acquire(), KeeperError);
  EXPECT_TRUE(ours.release());
  EXPECT_EQ(java.call("semaphore-mutex " + dir_ + " " + ms(kWait)), "acquired");
  EXPECT_EQ(java.call("release"), "released");
  EXPECT_TRUE(test::wait_children(
      *c.keeper(), dir_ + "/leases", [](const auto& n) { return n.empty(); }, kWait));
  for (const char* child : {"/leases", "/locks"}) (void)c.keeper()->try_remove(dir_ + child);
}

// Curator's LeaderLatch and ours on one path: one queue, one leader at a
// time, each naming the other's leader by the id in its node.
TEST_F(CuratorInteropTest, CuratorLeaderLatchAndOursElectOneLeaderAtATime) {
  auto& java = peer();
  Client& c = client();
  LeaderLatch ours(c, dir_, "cpp");
  ASSERT_EQ(java.reply(), "ready");
  ASSERT_EQ(java.call("latch-start " + dir_ + " java"), "started");
  ASSERT_EQ(java.call("latch-await " + ms(kWait)), "leader");
  auto leads = std::make_shared<std::promise<bool>>();
  auto ours_leads = leads->get_future();
  ours.async_await_leadership(std::nullopt, {}, [leads](std::exception_ptr error, bool leader) {
    if (error) leads->set_exception(error);
    else leads->set_value(leader);
  });
  ASSERT_TRUE(wait_queue_length(2));
  EXPECT_FALSE(ours.has_leadership());
  EXPECT_EQ(ours.leader().value_or(LatchParticipant{}).id, "java");
  EXPECT_EQ(java.call("latch-leader"), "leader-id java true");
  EXPECT_EQ(java.call("latch-close"), "closed");
  ASSERT_EQ(ours_leads.wait_for(kWait), std::future_status::ready);
  EXPECT_TRUE(ours_leads.get());
  // Curator joins again, behind ours: it does not lead, and names ours.
  ASSERT_EQ(java.call("latch-start " + dir_ + " java-again"), "started");
  ASSERT_TRUE(wait_queue_length(2));
  EXPECT_EQ(java.call("latch-leader"), "leader-id cpp true");
  EXPECT_EQ(java.call("latch-await 300"), "timeout");
  EXPECT_EQ(java.call("latch-has"), "has false");
  EXPECT_TRUE(ours.has_leadership());
  ours.close();
  EXPECT_EQ(java.call("latch-await " + ms(kWait)), "leader");
  EXPECT_EQ(ours.leader().value_or(LatchParticipant{}).id, "java-again");
  EXPECT_EQ(java.call("latch-close"), "closed");
}

// Curator's LeaderSelector and ours on one path: one mutex queue, one leader
// at a time, each naming the other's leader by the id in its node.
TEST_F(CuratorInteropTest, CuratorLeaderSelectorAndOursLeadOneAtATime) {
  auto& java = peer();
  Client& c = client();
  test::Latch ours_leads;
  LeaderSelector ours(c, dir_, "cpp", [&](const LeaderTerm& term) {
    ours_leads.open();
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    cv.wait(lock, term.stop, [] { return false; });
  });
  ASSERT_EQ(java.reply(), "ready");
  ASSERT_EQ(java.call("selector-start " + dir_ + " java"), "started");
  ASSERT_EQ(java.call("selector-await " + ms(kWait)), "leader");
  ours.start();
  ASSERT_TRUE(wait_queue_length(2));
  EXPECT_FALSE(ours.has_leadership());
  EXPECT_EQ(ours.leader().value_or(Participant{}).id, "java");
  EXPECT_EQ(java.call("selector-leader"), "leader-id java true");
  EXPECT_EQ(java.call("selector-end"), "ended");  // Curator's term ends: ours leads
  ASSERT_TRUE(ours_leads.wait(kWait));
  EXPECT_TRUE(ours.has_leadership());
  EXPECT_EQ(java.call("selector-leader"), "leader-id cpp true");
  EXPECT_EQ(java.call("selector-close"), "closed");
  // Curator queues again, behind ours: it does not lead until ours closes.
  ASSERT_EQ(java.call("selector-start " + dir_ + " java-again"), "started");
  ASSERT_TRUE(wait_queue_length(2));
  EXPECT_EQ(java.call("selector-await 300"), "timeout");
  EXPECT_EQ(java.call("selector-has"), "has false");
  ours.close();
  EXPECT_EQ(java.call("selector-await " + ms(kWait)), "leader");
  EXPECT_EQ(ours.leader().value_or(Participant{}).id, "java-again");
  EXPECT_EQ(java.call("selector-end"), "ended");
  EXPECT_EQ(java.call("selector-close"), "closed");
}

// Curator's GroupMember and ours in one group: the same layout (an
// ephemeral <group>/<id> holding the data), so each lists the other with its
// data, sees it change, and sees it leave.
TEST_F(CuratorInteropTest, CuratorsGroupMemberAndOursSeeEachOthersMembersAndData) {
  auto& java = peer();
  Client& c = client();
  const std::string group = dir_ + "/search";
  std::mutex m;
  std::condition_variable changed;
  GroupMemberOptions options;
  options.on_change = [&](const ChildEvent&) {
    { std::lock_guard lock(m); }
    changed.notify_all();
  };
  GroupMember ours(c, group, "cpp", "c1", options);
  const auto ours_sees = [&](const std::map<std::string, std::string>& expected) {
    std::unique_lock lock(m);
    return changed.wait_for(lock, kWait, [&] { return ours.current_members() == expected; });
  };
  ASSERT_EQ(java.reply(), "ready");
  ASSERT_EQ(java.call("group-start " + group + " java j1"), "started");
  ours.start();
  ASSERT_TRUE(ours.wait_until_registered(kWait));
  // Curator's node is ours in form: ephemeral, named by the id, the data as is.
  ASSERT_TRUE(test::wait_node(
      *c.keeper(), group + "/java",
      [](const std::optional<NodeData>& n) { return n && n->data == "j1"; }, kWait));
  EXPECT_NE(c.keeper()->exists(group + "/java")->ephemeral_owner, 0);

  EXPECT_TRUE(ours_sees({{"cpp", "c1"}, {"java", "j1"}}));
  EXPECT_EQ(java.call("group-await cpp=c1,java=j1 " + ms(kWait)), "members cpp=c1 java=j1");

  ASSERT_EQ(java.call("group-set j2"), "set");
  EXPECT_TRUE(ours_sees({{"cpp", "c1"}, {"java", "j2"}}));
  ours.set_this_data("c2");
  EXPECT_EQ(java.call("group-await cpp=c2,java=j2 " + ms(kWait)), "members cpp=c2 java=j2");

  ASSERT_EQ(java.call("group-close"), "closed");
  EXPECT_TRUE(ours_sees({{"cpp", "c2"}}));
  ASSERT_EQ(java.call("group-start " + group + " java j3"), "started");
  EXPECT_TRUE(ours_sees({{"cpp", "c2"}, {"java", "j3"}}));
  // Curator's GroupMember always lists itself, from its own data, so
  // "java=j3" alone would hold before its new cache has read anything. Its
  // cache showing ours first makes the wait below mean "Curator saw ours
  // leave"; and, its reads being answered after its create, it means the
  // create's reply was handled: a Curator PersistentNode closed before that
  // sends no delete, and its node stays for the session's life.
  EXPECT_EQ(java.call("group-await cpp=c2,java=j3 " + ms(kWait)), "members cpp=c2 java=j3");
  ours.close();
  EXPECT_EQ(java.call("group-await java=j3 " + ms(kWait)), "members java=j3");
  EXPECT_EQ(java.call("group-close"), "closed");
  EXPECT_TRUE(test::wait_children(
      *c.keeper(), group, [](const auto& names) { return names.empty(); }, kWait));
  (void)c.keeper()->try_remove(group);  // before the fixture looks for what is left in dir_
}

}  // namespace
}  // namespace zkr
