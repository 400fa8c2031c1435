#include "errors.hpp"

#include <cstdio>
#include <iostream>
#include <string>
#include <system_error>

#include "args.hpp"
#include "connection.hpp"
#include "exit_codes.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/error.hpp"

namespace zkr::cli {

void print_error(std::string_view message) {
  // One write per line, so that lines of concurrent zkr runs sharing a
  // terminal or log file do not interleave mid-line.
  std::string line = "zkr: ";
  line += message;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

int run_reporting_errors(std::string_view verb, const std::function<int()>& body) {
  const std::string help_hint =
      verb.empty() ? "try 'zkr --help'" : "try 'zkr " + std::string(verb) + " --help'";
  try {
    return body();
  } catch (const UsageError& e) {
    print_error(std::string(e.what()) + " (" + help_hint + ")");
    return exit_code::usage;
  } catch (const std::invalid_argument& e) {
    print_error(e.what());
    return exit_code::usage;
  } catch (const Unreachable& e) {
    print_error(e.what());
    return exit_code::unavailable;
  } catch (const ListingTooLarge& e) {
    print_error(e.path() + " has " + std::to_string(e.children()) +
                " children, more than the limit of " + std::to_string(e.limit()) +
                " for one listing; pass --max-children " + std::to_string(e.children()) +
                " (or more) to list it anyway: the reply will be large");
    return exit_code::listing_too_large;
  } catch (const KeeperError& e) {
    if (e.errc() == Errc::foreign_lock_protocol) {
      // A deployment error, not ZooKeeper's: say what is on the path and
      // what zkr lock can share a path with.
      print_error(std::string(e.what()) +
                  (verb == "elect"
                       ? " (zkr elect joins only a leader latch: zkrecipes' or Curator's "
                         "LeaderLatch)"
                       : " (zkr lock shares a path only with zkrecipes locks, Curator's "
                         "InterProcessMutex and, with --with-kazoo, kazoo's locks)"));
      return exit_code::foreign_lock;
    }
    if (is_connection_error(e.errc())) {
      print_error(std::string("lost the connection to ZooKeeper: ") + e.what());
      return exit_code::unavailable;
    }
    print_error(std::string("ZooKeeper error: ") + e.what());
    return exit_code::zookeeper;
  } catch (const std::system_error& e) {
    print_error(e.what());
    return exit_code::os_error;
  } catch (const std::exception& e) {
    print_error(std::string("internal error: ") + e.what());
    return exit_code::internal;
  }
}

}  // namespace zkr::cli
