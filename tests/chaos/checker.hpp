// The chaos run's independent checker. It knows nothing of the lock code: it
// reads the workers' logs, the nemesis log, the final znode state and the
// servers' record of every lock node's life (server_record.hpp), and asks
// what a correct lock must answer "no" to (see README.md for the rules):
//
//   overlap          two grants of one key in force at once, judged by the
//                    servers: a grant is in force from the moment the worker
//                    had it until its lock node was deleted on the servers
//                    (released, deleted by another client, or gone with its
//                    session), whatever the client believed meanwhile. On a
//                    read/write lock's key (grants of kind read and write)
//                    readers may share: only a write grant beside any other
//                    grant is one
//   lease_bound      more grants of a semaphore's key (kind lease) in force at
//                    once, by the same servers' rule, than its limit allows
//   token_order      applied writes of a key, in counter order, whose fencing
//                    token does not grow (equal only within one hold)
//   late_write       a write that took effect although sent after its grant's
//                    node was deleted on the servers, or after its grant said
//                    session_lost/node_deleted
//   silent_loss      a guarded write refused (its lock node was gone) while no
//                    grant of the hold said lost, by the time the reply came
//   lost_update      two accepted writes set a key's counter to one value, or
//                    a counter value no write explains, or an accepted value
//                    above the final counter
//   final_token      the token node does not hold the last write's token
//   acquire_overrun  an acquire returned later than its deadline plus one
//                    session timeout (plus any time its process was paused)
//   lost_unnoticed   a hold whose lock node was gone (servers' record, or a
//                    refused guarded write) that ran kLostNoticeGrace or
//                    longer without its grant saying lost
//   release_refused  a thread's release of a lock it was granted returned
//                    false: the object lost track of the grant (two threads
//                    sharing one lock object, one grant overwriting another)
//   invalid_holder_accepted  a lock constructor took a holder text with a
//                    byte < 0x20 or 0x7f, or longer than kMaxHolderText,
//                    instead of throwing std::invalid_argument
//   valid_holder_refused     a lock constructor refused a valid holder text
//   bystander_changed        a node of another application (planted before the
//                    workers started: a Kafka-like tree under the lock root,
//                    existing nodes at some keys' lock paths) was deleted,
//                    created again, or had its data changed by the end of
//                    the run and one sweep of the lock root (clean_lock_root)
//   command_outside_lock     a tick of a command run by `zkr lock`
//                    (zkr_supervisors.hpp) that landed on the servers after its
//                    lock node ended, or while a lock node before it in its
//                    queue still lived: the command made progress while it
//                    did not hold the lock (a stopped zkr must stop it)
//   two_leaders      a leader's guarded write (a leader latch's term) applied
//                    while another latch node before its own on the latch
//                    path was alive in the servers' record: two leaders
//   leader_write_after_loss  a leader's write applied after its latch node
//                    ended in the servers' record (it must have been refused)
//   epoch_order      a leader's write applied, in zxid order on a latch path,
//                    with a smaller epoch than an earlier applied write
//   wrong_epoch      a leader's write whose epoch is not its latch node's czxid
//   leader_silent_loss       a leader's guarded write refused (its latch node
//                    was gone) while its term had not said lost by the reply
//   counter_not_linearizable the counter participants' operations on their
//                    DistributedAtomicLong, with the final value the servers
//                    hold, have no linearizable order (an indeterminate
//                    outcome may have been applied or not, never twice)
//   member_view_diverged     a worker's GroupMember view of its group, at the
//                    end of the run, disagreed for the whole bound with a tree
//                    that stood still between two synced reads
//   leader_lost_unnoticed    a term whose latch node had ended (servers' record)
//                    that ran kLostNoticeGrace or longer (pauses of its
//                    process not counted) before it said lost or began to
//                    close: a leader that makes no write must still hear
//
// Nodes the nemesis made from a session of its own (`foreign` records) are
// not the library's: one left at the end is a problem of the run, not an
// orphan. The nemesis's `cut` records no longer end holds: they only say
// which faults hit a holder (holder_hits).
//
// Writes whose outcome is unknown (the link failed) count as applied exactly
// when the final counter needs them: counters only ever take the values
// 1, 2, 3... if the lock holds, so each counter value is one write.
//
//   auto input = zkr::chaos::load_run(dir);            // logs + final state
//   auto result = zkr::chaos::check(input);
//   if (!result.ok()) ...
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "event_log.hpp"
#include "server_record.hpp"

namespace zkr::chaos {

// How long a grant may take to say lost once its node is surely gone: a watch
// event or a state change away, on a loaded machine. Workers wait this long
// (and a second more) for the signal after a refused write before they let go.
inline constexpr std::chrono::milliseconds kLostNoticeGrace{3000};

// Holder texts (LockOptions::holder_id) longer than this are invalid.
inline constexpr std::size_t kMaxHolderText = 1024;

struct FinalState {
  std::map<std::string, std::int64_t> counters;  // key -> final counter
  std::map<std::string, std::int64_t> tokens;    // key -> final token node value
  struct Node {
    std::string path;
    std::int64_t owner = 0;  // ephemeral owner session, 0 if none
  };
  std::vector<Node> lock_root_nodes;  // every node under the lock root, directories too
  std::set<std::int64_t> live_sessions;
  std::map<std::string, std::int64_t> long_counters;  // path -> a DistributedAtomicLong's value
};

// A bystander: a node another application owns in the run's lock root (issue
// 11: "delete nothing that is not ours"). Not to be confused with the
// nemesis's `foreign` nodes, which come and go during the run. Only what no lock may change is recorded: which
// incarnation it is (czxid), its data and data version, its owner. Its
// children are not: at a lock path they come and go with the contenders.
struct Bystander {
  std::string path;
  bool exists = true;
  std::string data;
  std::int64_t czxid = 0;
  std::int64_t mzxid = 0;
  std::int32_t version = 0;  // data version
  std::int64_t owner = 0;    // ephemeral owner session, 0 if none
};

// RUN/bystanders.txt: each bystander before the workers start ("before"
// lines), the sweep of the lock root after the run ("sweep"), and each
// bystander again after the sweep ("after").
struct BystanderRecord {
  std::vector<Bystander> before;
  std::vector<Bystander> after;
  std::optional<std::string>
      sweep;  // what the sweep did ("removed=1 not_ours=9 ..." or "error=...")
};

// One bystander as a record's fields (data in hex: it is any bytes; "-" for
// none), and back (throws std::invalid_argument for a bad field).
Fields bystander_fields(const Bystander& node);
Bystander parse_bystander(const Event& event);
BystanderRecord read_bystanders(const std::string& path);

struct RunInput {
  std::vector<std::pair<std::string, std::vector<Event>>> workers;  // file name, events
  std::vector<Event> nemesis;
  FinalState final_state;
  BystanderRecord bystanders;   // empty for a run that recorded no bystanders
  std::vector<NodeLife> lives;  // the servers' record, times on CLOCK_MONOTONIC
  bool has_server_record = false;
};

struct CheckResult {
  // Totals.
  std::int64_t acquires = 0;
  std::int64_t acquisitions = 0;  // granted
  std::int64_t timeouts = 0;
  std::int64_t acquire_errors = 0;
  std::int64_t writes_accepted = 0;
  std::int64_t writes_rejected = 0;
  std::int64_t writes_unknown = 0;
  std::int64_t unknown_applied = 0;
  std::int64_t late_writes = 0;
  std::int64_t late_rejected = 0;
  std::int64_t late_applied = 0;  // late on purpose, yet sent while the node lived (no violation)
  std::int64_t invalid_holders_tried = 0;    // lock constructors given an invalid holder text
  std::int64_t invalid_holders_refused = 0;  // ...that threw std::invalid_argument, as they must
  std::int64_t shared_holds = 0;             // holds on a lock object two threads share
  std::int64_t bystanders = 0;               // other applications' nodes checked after the sweep
  std::string sweep;                         // what the sweep after the run did
  std::map<std::string, std::int64_t> lost_notices;   // by reason
  std::map<std::string, std::int64_t> client_states;  // suspended, lost, ...
  std::map<std::string, std::int64_t> faults;         // by kind
  std::map<std::string, std::int64_t> holder_hits;    // faults of a kind that hit a lock holder
  std::int64_t server_lives = 0;                      // lock node lives in the servers' record
  std::int64_t supervised_ticks = 0;  // ticks of commands run by `zkr lock`, from the record
  std::int64_t supervised_holds = 0;  // the lock nodes those ticks were made under
  std::int64_t void_grants = 0;       // grants whose node was gone before the worker had them
  // The leader latch participants (check_leader_latch).
  std::int64_t latch_terms = 0;             // terms begun, by the participants' records
  std::int64_t latch_lost_notices = 0;      // terms whose lost signal came
  std::int64_t latch_record_writes = 0;     // leaders' writes applied, by the servers' record
  std::int64_t latch_failovers = 0;         // epoch changes between those writes, path by path
  std::int64_t latch_writes_ok = 0;         // leaders' writes the participants saw applied
  std::int64_t latch_writes_refused = 0;    // ...refused (the latch node was gone)
  std::int64_t latch_writes_unknown = 0;    // ...with no outcome
  std::int64_t latch_late_writes = 0;       // made after the term said lost, on purpose
  std::int64_t latch_late_refused = 0;      // ...and refused
  std::int64_t latch_leader_hits = 0;       // delete_leader_node faults that deleted a term's node
  std::int64_t counter_ops = 0;             // counter operations judged (known outcome or not)
  std::int64_t counter_indeterminate = 0;   // ...whose outcome was unknown
  std::int64_t counter_search_states = 0;   // states the linearizability search visited
  std::int64_t member_views = 0;            // end-of-run group views checked
  std::int64_t member_views_converged = 0;  // ...that agreed with the servers' tree
  std::map<std::string, std::int64_t> counters;        // final, by key
  std::map<std::string, std::int64_t> grants_by_kind;  // mutex, multi, read, write, lease...

  // Violations, by rule, with a few examples each.
  std::map<std::string, std::int64_t> violations;
  std::vector<std::string> examples;
  std::vector<std::string> orphans;
  // Records that make no sense (a hold with no end, an unreadable field):
  // the run proves nothing where they are, so they fail it too.
  std::vector<std::string> problems;

  std::int64_t longest_stall_ns = 0;
  std::string longest_stall_where;

  std::int64_t violation_count() const;
  bool ok() const { return violation_count() == 0 && orphans.empty() && problems.empty(); }
};

inline constexpr std::size_t kExamplesPerRule = 5;

CheckResult check(const RunInput& input);

// The fault kinds aimed at a lock holder: each must hit one at least once.
inline const std::vector<std::string> kHolderFaultKinds = {"kill_worker",    "pause_worker",
                                                           "expire_session", "delete_holder_node",
                                                           "drop_own_watch", "pause_supervisor"};

// Where the `zkr lock` supervisors lock, and where their commands tick
// (zkr_supervisors.hpp): out of the lock root, so that the moves of another
// client on lock directories leave them alone.
inline constexpr const char* kSupervisedLockRoot = "/chaos/zkr";
inline constexpr const char* kTickRoot = "/chaos/ticks";
// Judges the ticks in `lives` (rule command_outside_lock) and counts them.
void check_supervised_commands(const std::vector<NodeLife>& lives, CheckResult& result);

// Where the workers' leader latch participants join (one latch path below
// it, "l0"), and where their leaders' guarded writes land: a write of a
// leader of kLatchRoot/l0 is a persistent sequential node in
// kLeaderWriteRoot/l0 named "<its latch node's name>-e<epoch>-w<sequence>".
inline constexpr const char* kLatchRoot = "/chaos/latch";
inline constexpr const char* kLeaderWriteRoot = "/chaos/lwrites";
// pid -> the spans [from, to] (ns) its process was stopped (SIGSTOP), from
// the nemesis's "paused" records.
using Pauses = std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>>;
// How long pid was stopped within [from, to].
std::int64_t paused_within(const Pauses& pauses, std::int64_t pid, std::int64_t from,
                           std::int64_t to);

// Judges the latch nodes and leaders' writes in `input.lives` (two_leaders,
// leader_write_after_loss, epoch_order, wrong_epoch) and the participants'
// records in `input.workers` (leader_silent_loss, and with the lives and
// `pauses`, leader_lost_unnoticed), and counts them.
void check_leader_latch(const RunInput& input, const Pauses& pauses, CheckResult& result);

// Where the workers' counter participants count (counter_participant.hpp):
// one DistributedAtomicLong, kCounterRoot/c0, initialized to 0 by the runner.
inline constexpr const char* kCounterRoot = "/chaos/counter";
// Judges the counter participants' records in `input.workers` with the final
// value in `input.final_state` (counter_not_linearizable), and counts them.
void check_counter_history(const RunInput& input, CheckResult& result);

// Where the workers' group members register (member_participant.hpp): one
// group, kGroupRoot/g0, made by the runner.
inline constexpr const char* kGroupRoot = "/chaos/group";
// Judges the workers' end-of-run group views (member_view_diverged), and counts them.
void check_member_views(const RunInput& input, CheckResult& result);

// What a run with these fault kinds must have shown to mean something: every
// kind of kHolderFaultKinds it used hit a holder, and (if it used one that
// ends a holder's session or node) at least one late write was made and
// refused; and the leader latch participants led, with at least one failover
// on the servers' record; the counter participants operated; and some
// group view converged. One line per shortfall.
std::vector<std::string> bite_problems(const CheckResult& result,
                                       const std::vector<std::string>& kinds);

// Final state file: one line per fact, in the event format with time 0:
//   "0 counter key=k0 value=17", "0 token key=k0 value=4294967391",
//   "0 node path=/chaos/locks/k0 owner=0", "0 live session=1a2b..."
void write_final_state(const std::string& path, const FinalState& state);
FinalState read_final_state(const std::string& path);

// Reads DIR/worker-*.log, DIR/nemesis.log, DIR/final-state.txt,
// DIR/bystanders.txt and DIR/server-record.txt (each if there is one).
RunInput load_run(const std::string& dir);

}  // namespace zkr::chaos
