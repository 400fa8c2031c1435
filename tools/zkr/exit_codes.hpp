// tools/zkr/exit_codes.hpp: what `zkr` returns, in one place, so that --help,
// docs/cli.md and the code cannot disagree.
//
// Codes of our own come from sysexits(3), which few commands use, so a script
// can tell "zkr could not do its job" from "the command failed". `zkr lock`
// passes its command's code through (0..125, and 128+S for a command killed
// by signal S, as shells report it), so its own codes must stay clear of the
// ones commands commonly return: 1 and 2 are everybody's.
#pragma once

namespace zkr::cli::exit_code {

inline constexpr int ok = 0;
inline constexpr int usage = 64;  // EX_USAGE: bad arguments, bad path, unknown verb
inline constexpr int listing_too_large =
    65;  // EX_DATAERR: a directory has more children than --max-children
inline constexpr int bad_counter_data = 65;  // EX_DATAERR: zkr counter of a node that is not one
inline constexpr int no_such_root = 66;      // EX_NOINPUT: ls/cleanup of a path that does not exist
inline constexpr int unavailable =
    69;  // EX_UNAVAILABLE: ZooKeeper unreachable (connect deadline, lost link)
inline constexpr int internal = 70;        // EX_SOFTWARE: a bug in zkr or the library
inline constexpr int os_error = 71;        // EX_OSERR: fork, pipe, signal set-up failed
inline constexpr int member_refused = 73;  // EX_CANTCREAT: zkr member's GROUP/ID is held by
                                           // another live session; not registered
inline constexpr int timeout = 75;         // EX_TEMPFAIL: the lock was not acquired in --timeout
inline constexpr int zookeeper = 76;     // EX_PROTOCOL: ZooKeeper refused an operation (auth, ...)
inline constexpr int foreign_lock = 78;  // EX_CONFIG: another lock protocol (Curator's semaphore or
                                         // read/write lock, kazoo's locks, an unknown one) uses
                                         // the lock path; not queued
// Not a sysexits code: no program that follows sysexits(3) returns it, and it
// is below 126, so it cannot be mistaken for a shell's or a signal's code.
inline constexpr int lock_lost = 79;         // the lock was lost while the command ran
inline constexpr int counter_conflict = 80;  // zkr counter: not applied (--cas found another value)
inline constexpr int counter_indeterminate = 81;  // zkr counter: applied once or not at all
inline constexpr int not_executable = 126;        // as shells: found but could not be run
inline constexpr int not_found = 127;             // as shells: command not found
inline constexpr int signal_base = 128;  // 128+S: killed by signal S (command or zkr itself)

}  // namespace zkr::cli::exit_code
