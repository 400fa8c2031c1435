#include "support/ensemble.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include "zkr/path.hpp"

namespace zkr::test {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Runs `scripts/ensemble VERB ARGS`: its output, trimmed; throws with that
// output if it fails.
std::string run_script(const std::string& verb_and_args) {
  // The script finds the ensemble through ZKR_ENSEMBLE_DIR, which we inherit.
  const std::string command =
      "bash '" + env("ZKR_ENSEMBLE_SCRIPT") + "' " + verb_and_args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  std::string out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) out += buffer.data();
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("'" + command + "' failed: " + out);
  return trim(out);
}

}  // namespace

std::string connect_string() { return env("ZK_CONNECT"); }

int first_server_port() {
  const std::string hosts = connect_string();
  const std::string first = hosts.substr(0, hosts.find(','));
  return std::stoi(first.substr(first.rfind(':') + 1));
}

std::unique_ptr<Client> connected_client(const std::string& hosts,
                                         std::chrono::milliseconds session_timeout) {
  ClientOptions options;
  options.connect_string = hosts;
  options.session_timeout = session_timeout;
  return connected_client(std::move(options));
}

std::unique_ptr<Client> connected_client(ClientOptions options) {
  const std::string hosts = options.connect_string;
  auto client = std::make_unique<Client>(std::move(options));
  if (!client->block_until_connected(std::chrono::seconds(30)))
    throw std::runtime_error("no connection to " + hosts);
  return client;
}

int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("bind failed");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

void remove_tree(Keeper& keeper, const std::string& path) {
  if (auto children = keeper.try_children(path); children.ok())
    for (const auto& name : children.value().names) remove_tree(keeper, join_path(path, name));
  (void)keeper.try_remove(path);
}

bool can_inject_server_faults() {
  return !connect_string().empty() && !env("ZKR_ENSEMBLE_SCRIPT").empty() &&
         !env("ZKR_ENSEMBLE_DIR").empty();
}

void require_whole_ensemble(const std::string& why) {
  // ctest's resource allocation: CTEST_RESOURCE_GROUP_COUNT groups, each
  // named by CTEST_RESOURCE_GROUP_<i>, with CTEST_RESOURCE_GROUP_<i>_ENSEMBLE
  // = "id:shared,slots:N" for the ensemble's slots this test holds.
  const std::string groups = env("CTEST_RESOURCE_GROUP_COUNT");
  if (groups.empty()) return;
  const std::string whole = env("ZKR_WHOLE_ENSEMBLE_SLOTS");
  int held = 0;
  for (int i = 0; i < std::stoi(groups); ++i) {
    const std::string slots =
        env(("CTEST_RESOURCE_GROUP_" + std::to_string(i) + "_ENSEMBLE").c_str());
    const auto at = slots.find("slots:");
    if (at != std::string::npos) held += std::stoi(slots.substr(at + 6));
  }
  if (whole.empty() || held < std::stoi(whole))
    throw std::logic_error(
        why + ", but ctest lets other live tests run beside this one (it holds " +
        std::to_string(held) + " of " + (whole.empty() ? "?" : whole) +
        " ensemble slots): name it in ZKR_WHOLE_ENSEMBLE_TESTS in tests/CMakeLists.txt");
}

std::int64_t next_zxid(Keeper& keeper, const std::string& dir) {
  require_whole_ensemble("counting the servers' zxids counts every test's writes");
  const auto made = keeper.create(dir + "/probe", "", CreateMode::ephemeral);
  keeper.remove(made.path);
  return made.stat.czxid;
}

std::string ensemble(const std::string& verb_and_args) {
  if (!can_inject_server_faults()) throw std::runtime_error("no ensemble script configured");
  const std::string verb = verb_and_args.substr(0, verb_and_args.find(' '));
  // Only the verbs that read disturb nobody.
  static const std::set<std::string> kReadOnly = {"connect", "dir",    "leader", "mntr", "pid",
                                                  "port",    "status", "synced", "zxid"};
  if (!kReadOnly.contains(verb))
    require_whole_ensemble("'" + verb + "' disturbs the servers every live test uses");
  // kill and freeze first wait until the other servers are in sync
  // (scripts/ensemble synced): a test that takes a server away means the
  // others to carry on.
  return run_script(verb_and_args);
}

int server_index_of(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos) return 0;
  const std::string port = host_port.substr(colon + 1);
  for (int i = 1; i <= 9; ++i) {
    try {
      if (ensemble("port " + std::to_string(i)) == port) return i;
    } catch (const std::runtime_error&) {
      return 0;  // past the last server
    }
  }
  return 0;
}

std::string unique_path(const std::string& name) {
  // The pid alone does not make a run's paths unique: pids wrap (at 32768
  // by default, often within one CI run), and a test process may get the
  // pid of an earlier one whose nodes, or whose orphaned child, are still
  // there. A random token per process tells them apart.
  static const std::string token = [] {
    std::random_device random;
    char text[9];
    std::snprintf(text, sizeof text, "%08x", static_cast<unsigned>(random()));
    return std::string(text);
  }();
  static std::atomic<int> counter{0};
  return "/t-" + std::to_string(::getpid()) + "-" + token + "-" + std::to_string(++counter) + "-" +
         name;
}

namespace {

// The servers of the connect string other than `host`, or all of them when
// none is left (an ensemble of one).
std::string hosts_other_than(const std::string& host) {
  const std::string all = connect_string();
  std::string others;
  std::size_t start = 0;
  while (start <= all.size()) {
    auto end = all.find(',', start);
    if (end == std::string::npos) end = all.size();
    const std::string one = all.substr(start, end - start);
    if (!one.empty() && one != host) others += (others.empty() ? "" : ",") + one;
    start = end + 1;
  }
  return others.empty() ? all : others;
}

}  // namespace

bool wait_new_session(Client& client, std::uint64_t epoch, std::chrono::milliseconds timeout) {
  std::mutex mutex;
  std::condition_variable changed;
  const auto id = client.add_listener([&](ConnectionState) {
    std::lock_guard lock(mutex);
    changed.notify_all();
  });
  // A listener's call is the cue; the predicate is also looked at again
  // every tenth of a second, bounded by `timeout`, in case the epoch moves
  // after the last state was announced.
  const auto reached_now = [&] { return client.session_epoch() != epoch && client.is_connected(); };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex);
  bool reached = reached_now();
  while (!reached && std::chrono::steady_clock::now() < deadline) {
    (void)changed.wait_for(lock, std::chrono::milliseconds(100));
    reached = reached_now();
  }
  lock.unlock();
  client.remove_listener(id);
  return reached;
}

void expire_session(const Keeper& victim, std::chrono::milliseconds timeout) {
  // The intruder joins the session, closes it, then joins again to prove it
  // gone: the server answers a join of a closed session with "expired".
  //
  // It joins through a server other than the victim's. A server that gets
  // the close on one connection leaves open any other connection it has for
  // the session, so a victim that had reconnected to the intruder's server
  // would stay connected, pinged and answered, to a session that no longer
  // exists, and never hear that it expired. Closed from elsewhere, the close
  // reaches the victim's server as a transaction, which drops the victim's
  // connection; its reconnect is then told the session expired. (A victim
  // that lost its link by itself just then could still land on the
  // intruder's server: each attempt looks again where the victim is.)
  struct Joined {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<SessionState> state;
  };
  KeeperConfig config;
  config.session_timeout = victim.session_timeout();
  config.session_id = victim.session_id();
  config.session_password = victim.session_password();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int attempt = 1; attempt <= 10; ++attempt) {
    config.hosts = hosts_other_than(victim.connected_host());
    auto joined = std::make_shared<Joined>();
    auto intruder = connect_keeper(config, [joined](SessionState state) {
      std::lock_guard lock(joined->mutex);
      if (state == SessionState::connected || state == SessionState::expired) joined->state = state;
      joined->cv.notify_all();
    });
    std::unique_lock lock(joined->mutex);
    if (!joined->cv.wait_until(lock, deadline, [&] { return joined->state.has_value(); })) break;
    const auto state = *joined->state;
    lock.unlock();
    if (state == SessionState::expired) return;
    intruder.reset();  // closing the joined handle ends the session on the server
  }
  throw std::runtime_error("could not expire session " + std::to_string(victim.session_id()));
}

int connected_server(const Keeper& keeper) {
  const int index = server_index_of(keeper.connected_host());
  if (index == 0) throw std::runtime_error("not connected to a server of the test ensemble");
  return index;
}

Repair::~Repair() {
  try {
    now();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "could not repair the ensemble: " << e.what();
  }
}

void Repair::now() {
  if (!verb_.empty()) ensemble(std::exchange(verb_, ""));
}

}  // namespace zkr::test
