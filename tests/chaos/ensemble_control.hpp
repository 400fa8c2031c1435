// The chaos run's own ZooKeeper ensemble, driven through scripts/ensemble
// with an explicit --dir, so it never touches the ensemble that scripts/test
// started for the other tests (whose directory is in ZKR_ENSEMBLE_DIR).
//
// A guard process, forked before anything else starts, stops the ensemble
// (by the PIDs the script recorded) when the runner dies in any way, SIGKILL
// included: it waits for the end of a pipe only the runner holds.
//
//   zkr::chaos::EnsembleGuard::arm(script, dir);      // first thing in main()
//   zkr::chaos::EnsembleControl zk(script, dir);
//   std::string connect = zk.start(3);
//   zk.run("kill 2"); zk.run("restart 2");
#pragma once

#include <string>

namespace zkr::chaos {

class EnsembleControl {
 public:
  EnsembleControl(std::string script, std::string dir);

  // `scripts/ensemble --dir DIR -q VERB...`; returns its stdout trimmed.
  // Throws std::runtime_error with its output if it exits non-zero.
  std::string run(const std::string& verb_and_args) const;
  std::string start(int servers) const { return run("start -n " + std::to_string(servers)); }
  // Stops the servers (SIGTERM, then SIGKILL); keeps DIR (their logs). Never throws.
  void stop() const noexcept;
  int port(int index) const { return std::stoi(run("port " + std::to_string(index))); }
  int leader() const { return std::stoi(run("leader")); }
  const std::string& dir() const noexcept { return dir_; }

 private:
  std::string script_;
  std::string dir_;
};

// Forks the guard process. Call while the process has a single thread (first
// thing in main). Idempotent per process.
void arm_ensemble_guard(const std::string& script, const std::string& dir);

}  // namespace zkr::chaos
