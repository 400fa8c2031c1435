#include "status_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "errors.hpp"

namespace zkr::cli {

StatusFile::StatusFile(const std::string& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) {
  if (fd_ < 0) throw UsageError("--status-file: cannot open " + path + ": " + std::strerror(errno));
}

StatusFile::~StatusFile() { ::close(fd_); }

void StatusFile::add(std::string name, std::int64_t value) noexcept {
  try {
    extra_.emplace_back(std::move(name), value);
  } catch (const std::exception&) {  // out of memory: the line goes without it
  }
}

void StatusFile::write(const char* outcome, int exit, std::optional<int> command_status) noexcept {
  if (written_) return;
  written_ = true;
  std::string line;
  try {
    // Ordered: "outcome" first, as --help shows it and scripts may match it.
    nlohmann::ordered_json status{{"outcome", outcome}, {"exit", exit}};
    if (command_status) status["command_status"] = *command_status;
    for (const auto& [name, value] : extra_) status[name] = value;
    line = status.dump() + "\n";
  } catch (const std::exception& e) {  // out of memory: say so, zkr's exit code still tells
    print_error(std::string("--status-file: ") + e.what());
    return;
  }
  if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    print_error(std::string("--status-file: write failed: ") + std::strerror(errno));
}

}  // namespace zkr::cli
