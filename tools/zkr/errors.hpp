// tools/zkr/errors.hpp: how zkr reports failure: one line on stderr starting
// "zkr: ", and an exit code from exit_codes.hpp chosen by the error's type.
//
//   return run_reporting_errors("ls", [&] { return list_locks(args); });
#pragma once

#include <functional>
#include <string_view>

namespace zkr::cli {

// "zkr: <message>" on stderr, whatever the log level: errors are always shown.
void print_error(std::string_view message);

// Runs body and returns its exit code; an exception becomes a message and the
// matching code: UsageError and std::invalid_argument (the library's bad
// path, bad hosts) -> usage, with a pointer to `zkr help VERB`;
// Unreachable and connection-level KeeperErrors -> unavailable;
// ListingTooLarge -> listing_too_large; foreign_lock_protocol -> foreign_lock;
// other KeeperErrors -> zookeeper;
// std::system_error -> os_error; anything else -> internal.
int run_reporting_errors(std::string_view verb, const std::function<int()>& body);

}  // namespace zkr::cli
