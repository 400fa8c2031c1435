// The stop of a `zkr lock` supervisor that holds its lock, past the session
// timeout: the Nemesis's pause_supervisor. zkr's guard must stop its command
// before the session can expire and the lock pass on. See nemesis.hpp.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "checker.hpp"
#include "nemesis.hpp"
#include "nemesis_detail.hpp"
#include "zkr_supervisors.hpp"

namespace zkr::chaos {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

char state_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

std::string sequence_of(const std::string& name) {
  const auto at = name.rfind("-lock-");
  return at == std::string::npos ? name : name.substr(at + 6);
}

}  // namespace

// A holding zkr: its command wrote RUN/held-<zkr pid> naming the lock node
// (chaos_ticker.cpp), that node is first in its queue and alive, and the pid
// is a running supervisor's. The newest such file first: a stop early in a
// hold outlasts the session while the command would still have work to do.
std::string Nemesis::pause_supervisor() {
  if (!targets_.supervisors) return std::string(kNotInjected) + "no_supervisors";
  pid_t pid = 0;
  std::string node;
  for (const auto until = Clock::now() + 10s; pid == 0 && Clock::now() < until;) {
    std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
    for (const auto& entry : std::filesystem::directory_iterator(targets_.run_dir)) {
      std::error_code ignored;
      if (entry.path().filename().string().starts_with("held-"))
        files.emplace_back(entry.last_write_time(ignored), entry.path());
    }
    std::sort(files.rbegin(), files.rend());
    for (const auto& [when, path] : files) {
      const auto candidate = static_cast<pid_t>(std::atol(path.filename().string().c_str() + 5));
      std::string named;
      std::getline(std::ifstream(path), named);
      if (named.empty() || !targets_.supervisors->owns(candidate) || owner_of(named) == 0) continue;
      const auto dir = named.substr(0, named.rfind('/'));
      const auto name = named.substr(named.rfind('/') + 1);
      const auto children = targets_.observer->with_retry([&](Keeper& k) {
        k.sync(dir);
        return k.children(dir).names;
      });
      bool first = true;
      for (const auto& c : children)
        first = first && !(is_lock_node_name(c) && sequence_of(c) < sequence_of(name));
      if (!first) continue;
      pid = candidate;
      node = named;
      break;
    }
    if (pid == 0) std::this_thread::sleep_for(50ms);
  }
  if (pid == 0) return std::string(kNotInjected) + "no_holding_supervisor";
  // SIGSTOP cannot be caught; SIGTSTP is ^Z, which zkr passes on to its
  // command's group before it stops itself.
  const bool tstp = rng_() % 2 == 0;
  const auto from = monotonic_ns();
  if (!targets_.supervisors->signal(pid, tstp ? SIGTSTP : SIGSTOP))
    return std::string(kNotInjected) + "gone,pid=" + std::to_string(pid);
  for (const auto until = Clock::now() + 5s; Clock::now() < until && state_of(pid) != 'T';)
    std::this_thread::sleep_for(10ms);
  const bool stopped = state_of(pid) == 'T';
  log_.write("cut", {{"pid", std::to_string(pid)},
                     {"why", "pause_supervisor"},
                     {"from", std::to_string(from)},
                     {"to", std::to_string(monotonic_ns())},
                     {"node", node}});
  // Past the session timeout, with a margin for the server's expiry tick: the
  // lock passes on to the next zkr while this one is stopped.
  const auto d = targets_.session_timeout + between(2000ms, 3000ms);
  pause(d);
  targets_.supervisors->signal(pid, SIGCONT);
  return "pid=" + std::to_string(pid) + ",signal=" + (tstp ? "SIGTSTP" : "SIGSTOP") +
         ",stopped=" + (stopped ? "1" : "0") + ",ms=" + std::to_string(d.count()) + ",node=" + node;
}

}  // namespace zkr::chaos
