#include "curator_peer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "context.hpp"

#ifndef ZKR_CURATOR_BENCH_JAVA
#error \
    "ZKR_CURATOR_BENCH_JAVA must name benchmarks/curator/CuratorBench.java (benchmarks/CMakeLists.txt)"
#endif

namespace zkr::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Debian's jars: the classes a Curator lock client loads (as the interop test
// uses them), and slf4j-nop to keep the JVM quiet.
const char* const kJarDir = "/usr/share/java";
const char* const kJars[] = {"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
                             "zookeeper.jar",       "zookeeper-jute.jar",    "guava.jar",
                             "slf4j-api.jar",       "slf4j-nop.jar"};

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const auto candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

// fork and exec argv with stdin/stdout on pipes (when given); stderr inherited.
pid_t spawn(const std::vector<std::string>& argv, int* to_child, int* from_child) {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (to_child && ::pipe2(in, O_CLOEXEC) != 0) return -1;
  if (from_child && ::pipe2(out, O_CLOEXEC) != 0) return -1;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (to_child) ::dup2(in[0], 0);
    if (from_child) ::dup2(out[1], 1);
    ::execv(args[0], args.data());
    _exit(127);
  }
  if (to_child) {
    ::close(in[0]);
    *to_child = in[1];
  }
  if (from_child) {
    ::close(out[1]);
    *from_child = out[0];
  }
  return pid;
}

// The child's exit status, or nullopt (and it is killed) past the deadline.
bool wait_exit(pid_t pid, Clock::time_point deadline, int& status) {
  for (int polls = 0; polls < 100'000; ++polls) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    if (Clock::now() >= deadline) break;
    pollfd none{-1, 0, 0};
    ::poll(&none, 0, 20);  // a child's exit has no descriptor to wait on here
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return false;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

CuratorBuild::CuratorBuild() {
  const std::string javac = find_program("javac");
  java_ = find_program("java");
  if (javac.empty() || java_.empty())
    throw RunError(
        "--peers curator needs javac and java in PATH (scripts/setup installs "
        "default-jdk-headless)");
  for (const char* jar : kJars) {
    const auto path = std::filesystem::path(kJarDir) / jar;
    if (!std::filesystem::exists(path))
      throw RunError("--peers curator needs " + path.string() +
                     " (scripts/setup installs the Curator jars)");
    classpath_ += path.string() + ":";
  }
  std::string dir = (std::filesystem::temp_directory_path() / "zkr-bench-curator-XXXXXX").string();
  if (!::mkdtemp(dir.data())) throw RunError("cannot make a temporary directory for javac");
  dir_ = dir;
  // W9's LeaderLatch and W10's counter and cache sides are classes of their own beside it.
  const auto here = std::filesystem::path(ZKR_CURATOR_BENCH_JAVA).parent_path();
  const std::string failover = (here / "CuratorFailover.java").string();
  const std::string counter = (here / "CuratorCounter.java").string();
  const std::string cache = (here / "CuratorCacheRound.java").string();
  const pid_t pid = spawn({javac, "-nowarn", "-d", dir_, "-cp", classpath_, ZKR_CURATOR_BENCH_JAVA,
                           failover, counter, cache},
                          nullptr, nullptr);
  int status = 0;
  if (pid < 0 || !wait_exit(pid, Clock::now() + std::chrono::seconds(180), status) ||
      !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw RunError(std::string("javac failed on ") + ZKR_CURATOR_BENCH_JAVA);
  classpath_ += dir_;
}

CuratorBuild::~CuratorBuild() {
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

CuratorPeer::CuratorPeer(const CuratorBuild& build, const std::string& connect, unsigned sessions)
    : build_(build) {
  pid_ = spawn({build.java(), "-XX:+UseSerialGC", "-cp", build.classpath(), "CuratorBench", connect,
                std::to_string(sessions)},
               &to_peer_, &from_peer_);
  if (pid_ < 0) throw RunError("cannot start " + build.java());
  const auto ready = read_line(Clock::now() + std::chrono::seconds(60));
  if (ready != "ready") throw RunError("the Curator peer did not start: " + ready);
}

CuratorPeer::~CuratorPeer() {
  if (pid_ < 0) return;
  static constexpr char kQuit[] = "quit\n";
  if (to_peer_ >= 0) (void)!::write(to_peer_, kQuit, sizeof kQuit - 1);
  if (to_peer_ >= 0) ::close(to_peer_);
  int status = 0;
  (void)wait_exit(pid_, Clock::now() + std::chrono::seconds(10), status);
  if (from_peer_ >= 0) ::close(from_peer_);
  for (unsigned i = 0; i < next_file_; ++i) {
    std::error_code ec;
    std::filesystem::remove(build_.dir() + "/holds-" + std::to_string(i) + ".intervals", ec);
  }
}

std::string CuratorPeer::read_line(Clock::time_point deadline) {
  for (int reads = 0; reads < 1'000'000; ++reads) {
    if (const auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) throw RunError("the Curator peer did not answer in time");
    pollfd p{from_peer_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::read(from_peer_, buf, sizeof buf);
    if (n <= 0) throw RunError("the Curator peer exited (its stderr is above)");
    pending_.append(buf, static_cast<std::size_t>(n));
  }
  throw RunError("the Curator peer's reply is too long");
}

std::string CuratorPeer::interval_file() {
  return build_.dir() + "/holds-" + std::to_string(next_file_++) + ".intervals";
}

std::vector<std::string> CuratorPeer::command(const std::string& line,
                                              std::chrono::milliseconds timeout) {
  const std::string text = line + "\n";
  if (::write(to_peer_, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw RunError("cannot write to the Curator peer");
  const std::string reply = read_line(Clock::now() + timeout);
  auto w = words(reply);
  if (w.empty() || w[0] != "done") throw RunError("Curator peer, '" + line + "': " + reply);
  w.erase(w.begin());
  return w;
}

CuratorPeer::W1 CuratorPeer::w1(const std::string& path, std::chrono::milliseconds duration) {
  const auto w = command("w1 " + path + " " + std::to_string(duration.count()),
                         duration + std::chrono::seconds(60));
  W1 result;
  result.cycles = std::stoull(w.at(0));
  for (std::size_t i = 1; i < w.size(); ++i)
    result.latencies_ms.push_back(std::stod(w[i]) / 1000.0);
  return result;
}

CuratorPeer::W1 CuratorPeer::w3(const std::string& root, std::uint64_t keys, unsigned threads,
                                std::chrono::milliseconds duration) {
  const auto w = command("w3 " + root + " " + std::to_string(keys) + " " + std::to_string(threads) +
                             " " + std::to_string(duration.count()),
                         duration + std::chrono::seconds(90));
  W1 result;
  result.cycles = std::stoull(w.at(0));
  for (std::size_t i = 1; i < w.size(); ++i)
    result.latencies_ms.push_back(std::stod(w[i]) / 1000.0);
  return result;
}

CuratorPeer::W5 CuratorPeer::w5(const std::string& path, std::uint64_t waiters,
                                std::uint64_t handoffs, std::chrono::milliseconds duration) {
  const auto w = command("w5 " + path + " " + std::to_string(waiters) + " " +
                             std::to_string(handoffs) + " " + std::to_string(duration.count()),
                         duration + std::chrono::seconds(300));
  W5 result;
  result.handoffs = std::stoull(w.at(0));
  result.seconds = std::stod(w.at(1)) / 1e9;
  for (std::size_t i = 2; i < w.size(); ++i) result.handoffs_ms.push_back(std::stod(w[i]) / 1000.0);
  return result;
}

CuratorPeer::W2 CuratorPeer::w2(const std::string& path, unsigned workers,
                                std::chrono::milliseconds duration) {
  W2 result;
  result.interval_file = interval_file();
  const auto w = command("w2 " + path + " " + std::to_string(workers) + " " +
                             std::to_string(duration.count()) + " " + result.interval_file,
                         duration + std::chrono::seconds(90));
  result.acquisitions = std::stoull(w.at(0));
  result.counter = std::stoll(w.at(1));
  for (std::size_t i = 2; i < w.size(); ++i) result.waits_ms.push_back(std::stod(w[i]) / 1000.0);
  return result;
}

namespace {

// Microseconds from the reply, from `from` on, `count` of them, in ms.
std::vector<double> parse_waits_ms(const std::vector<std::string>& w, std::size_t from,
                                   std::size_t count) {
  if (from + count > w.size()) throw RunError("the Curator peer's reply is short of waits");
  std::vector<double> out;
  for (std::size_t i = from; i < from + count; ++i) out.push_back(std::stod(w[i]) / 1000.0);
  return out;
}

}  // namespace

CuratorPeer::W6 CuratorPeer::w6(const std::string& path, unsigned workers, unsigned write_every,
                                std::chrono::milliseconds duration) {
  W6 result;
  result.interval_file = interval_file();
  const auto w =
      command("w6 " + path + " " + std::to_string(workers) + " " + std::to_string(write_every) +
                  " " + std::to_string(duration.count()) + " " + result.interval_file,
              duration + std::chrono::seconds(90));
  result.reads = std::stoull(w.at(0));
  result.writes = std::stoull(w.at(1));
  result.counter = std::stoll(w.at(2));
  result.read_waits_ms = parse_waits_ms(w, 3, result.reads);
  result.write_waits_ms = parse_waits_ms(w, 3 + result.reads, result.writes);
  return result;
}

CuratorPeer::W7 CuratorPeer::w7_semaphore(const std::string& path, unsigned workers,
                                          std::int32_t leases, int reads,
                                          std::chrono::milliseconds duration) {
  return w7("w7-semaphore " + path + " " + std::to_string(workers) + " " + std::to_string(leases) +
                " " + std::to_string(reads),
            duration);
}

CuratorPeer::W7 CuratorPeer::w7_mutex(const std::string& path, unsigned workers,
                                      std::chrono::milliseconds duration) {
  return w7("w7-mutex " + path + " " + std::to_string(workers), duration);
}

CuratorPeer::W7 CuratorPeer::w7(const std::string& command_words,
                                std::chrono::milliseconds duration) {
  W7 result;
  result.interval_file = interval_file();
  const auto w =
      command(command_words + " " + std::to_string(duration.count()) + " " + result.interval_file,
              duration + std::chrono::seconds(90));
  result.acquisitions = std::stoull(w.at(0));
  result.waits_ms = parse_waits_ms(w, 1, w.size() - 1);
  return result;
}

CuratorPeer::W9 CuratorPeer::w9_close(const std::string& path, std::size_t participants,
                                      std::uint64_t rounds, std::chrono::milliseconds duration) {
  const auto w = command("w9-close " + path + " " + std::to_string(participants) + " " +
                             std::to_string(rounds) + " " + std::to_string(duration.count()),
                         duration + std::chrono::seconds(90));
  W9 result;
  result.elections = std::stoull(w.at(0));
  result.violations = std::stoull(w.at(1));
  result.seconds = std::stod(w.at(2)) / 1e9;
  result.failovers_ms = parse_waits_ms(w, 3, result.elections);
  return result;
}

void CuratorPeer::w9_victim(const std::string& via, const std::string& path,
                            std::chrono::milliseconds session_timeout, std::size_t participants) {
  (void)command("w9-victim " + via + " " + path + " " + std::to_string(session_timeout.count()) +
                    " " + std::to_string(participants),
                std::chrono::seconds(120));
}

std::int64_t CuratorPeer::w9_standby_wait(std::chrono::milliseconds wait) {
  const auto w =
      command("w9-standby-wait " + std::to_string(wait.count()), wait + std::chrono::seconds(30));
  return std::stoll(w.at(0));
}

void CuratorPeer::w9_victim_close() { (void)command("w9-victim-close", std::chrono::seconds(60)); }

CuratorPeer::W10 CuratorPeer::w10_counter(const std::string& path, unsigned workers,
                                          std::uint64_t adds_per_worker, unsigned retries,
                                          std::chrono::milliseconds duration) {
  const auto w = command("w10-counter " + path + " " + std::to_string(workers) + " " +
                             std::to_string(adds_per_worker) + " " + std::to_string(retries) + " " +
                             std::to_string(duration.count()),
                         duration + std::chrono::seconds(90));
  W10 result;
  result.succeeded = std::stoull(w.at(0));
  result.failed = std::stoull(w.at(1));
  result.conflicts = std::stoull(w.at(2));
  result.seconds = std::stod(w.at(3)) / 1e9;
  result.adds_ms = parse_waits_ms(w, 4, result.succeeded);
  return result;
}

void CuratorPeer::w10_cache_start(const std::string& group) {
  (void)command("w10-cache-start " + group, std::chrono::seconds(60));
}

double CuratorPeer::w10_cache_run(std::uint64_t changes, unsigned members) {
  const auto w = command("w10-cache-run " + std::to_string(changes) + " " + std::to_string(members),
                         std::chrono::seconds(300));
  return std::stod(w.at(0)) / 1e6;
}

bool CuratorPeer::w10_cache_check() {
  const auto w = command("w10-cache-check", std::chrono::seconds(60));
  return w.at(0) == "1";
}

}  // namespace zkr::bench
