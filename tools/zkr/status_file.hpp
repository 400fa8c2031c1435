// tools/zkr/status_file.hpp: `zkr lock --status-file`: zkr's own outcome,
// apart from the exit code it shares with the command.
//
// The file is emptied when zkr starts, so that a line left by an earlier run
// cannot pass for this one's: no line means zkr died.
//
//   StatusFile status(path);                        // UsageError if it cannot be opened
//   status.add("epoch", 4294967302);                 // zkr elect: once the term is known
//   status.write("held_throughout", 0, 0);          // once; later calls do nothing
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zkr::cli {

class StatusFile {
 public:
  explicit StatusFile(const std::string& path);
  ~StatusFile();
  StatusFile(const StatusFile&) = delete;
  StatusFile& operator=(const StatusFile&) = delete;

  // {"outcome":"...","exit":N[,"command_status":N]}: the command's status
  // as a shell reports it, if it ran and ended. Once, with one write(2) and
  // no stdio buffer: the path that ends zkr with _Exit flushes nothing.
  // A field of the line to come, after the others: what a verb learnt that a
  // script may need (zkr elect's "epoch"). Before write(); never throws.
  void add(std::string name, std::int64_t value) noexcept;

  void write(const char* outcome, int exit, std::optional<int> command_status) noexcept;
  bool written() const noexcept { return written_; }

 private:
  int fd_;
  bool written_ = false;
  std::vector<std::pair<std::string, std::int64_t>> extra_;
};

}  // namespace zkr::cli
