// `zkr member GROUP --id ID [options] [--] CMD ARGS...`: a service registered
// in a group exactly while it runs.
//
// zkr registers as the member ID of GROUP (zkr/group_member.hpp, Curator's
// GroupMember layout: an ephemeral GROUP/ID with the data) and runs CMD only
// while registered. A registration is a grant like a lock's (its node ours,
// watched), so running, losing and confirming are zkr lock's own
// (grant_run.hpp): a lost registration terminates CMD exactly as a lost lock
// does. When CMD ends zkr leaves the group (deletes the node).
//
// An ID held by another live session is never taken over: zkr waits for it
// to go until --timeout passes, or without --timeout exits at once, with its
// own code (exit_code::member_refused).
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "args.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "grant_verb.hpp"
#include "status_file.hpp"
#include "verbs.hpp"
#include "zkr/deadline.hpp"
#include "zkr/group_member.hpp"
#include "zkr/path.hpp"

namespace zkr::cli {
namespace {

std::vector<OptionSpec> member_specs() {
  auto specs = connection_option_specs();
  const std::vector<OptionSpec> own{
      {"id", 0, true, "ID", "this member's id: the node GROUP/ID (required)"},
      {"data", 0, true, "D", "this member's data, e.g. its address (default: empty)"},
      {"timeout", 't', true, "D",
       "give up if not registered within D of connecting (an ID held by another "
       "session is waited for until then)"},
      {"kill-after", 'k', true, "D",
       "if the registration is lost: SIGKILL the command D after SIGTERM (default 10s)"},
      {"status-file", 0, true, "PATH",
       "write zkr's own outcome to PATH as one JSON line (see Exit status)"},
  };
  specs.insert(specs.begin(), own.begin(), own.end());
  return specs;
}

struct MemberSettings {
  std::string group;
  std::string id;
  std::string data;
  CommandSettings run;
};

MemberSettings member_settings(const ParsedArgs& parsed) {
  MemberSettings s;
  const auto& operands = parsed.operands();
  if (operands.empty()) throw UsageError("missing GROUP and command");
  if (operands.size() < 2) throw UsageError("missing the command to run while registered");
  s.group = operands[0];
  validate_path(s.group);
  if (s.group == "/") throw UsageError("a group cannot be the root \"/\"");
  const auto id = parsed.value("id");
  if (!id) throw UsageError("missing --id ID");
  try {
    GroupMember::validate_member_id(*id);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--id: ") + e.what());
  }
  s.id = *id;
  validate_path(join_path(s.group, s.id));  // the whole path's length
  if (auto v = parsed.value("data")) s.data = *v;
  s.run = command_settings(parsed);
  return s;
}

// The member's registration state, for the wait: told on the Client's
// callback thread, waited for on zkr's.
class Registration {
 public:
  void operator()(PersistentNodeState) {
    { std::lock_guard lock(mutex_); }
    changed_.notify_all();
  }
  // True once registered; false when refused (unless still waiting for
  // the deadline), when the deadline passes, or on a stop.
  bool wait(const GroupMember& member, std::optional<std::chrono::milliseconds> timeout,
            std::stop_token stop) {
    const auto deadline =
        timeout ? deadline_after(*timeout) : std::chrono::steady_clock::time_point::max();
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, stop, deadline, [&] {
      const auto state = member.state();
      return state == PersistentNodeState::present ||
             (state == PersistentNodeState::refused && !timeout);
    });
    return member.state() == PersistentNodeState::present;
  }

 private:
  std::mutex mutex_;
  std::condition_variable_any changed_;
};

// zkr's registration in the group: a GroupMember, whose registration is
// the grant.
class Membership final : public CommandGrant {
 public:
  Membership(Client& client, const MemberSettings& settings)
      : settings_(settings),
        node_(join_path(settings.group, settings.id)),
        member_(client, settings.group, settings.id, settings.data, options(registration_)) {}
  bool acquire(std::stop_token stop) override {
    member_.start();
    return registration_->wait(member_, settings_.run.timeout, stop);
  }
  std::optional<int> refused(const Waited& waited, StatusFile* status) override {
    if (waited.signal || waited.error || waited.acquired ||
        member_.state() != PersistentNodeState::refused)
      return std::nullopt;
    // The refusal says the member waits for the holder to go: zkr waited
    // as long as it was told to.
    print_error("not registered: " + member_.refusal().value_or(node_ + " is another's") +
                (settings_.run.timeout
                     ? " (still so after --timeout " + format_duration(*settings_.run.timeout) + ")"
                     : " (zkr does not wait for it without --timeout)"));
    if (status) status->write("refused", exit_code::member_refused, std::nullopt);
    return exit_code::member_refused;
  }
  std::optional<Grant> grant() override { return member_.registration(); }
  std::vector<std::string> granted(const Grant& term, spdlog::logger& log, StatusFile*) override {
    log.info("registered as {} in {} ({})", settings_.id, settings_.group, term.node_path());
    return {"ZKR_MEMBER_GROUP=" + settings_.group, "ZKR_MEMBER_ID=" + settings_.id,
            "ZKR_MEMBER_NODE=" + node_};
  }
  void release() override { member_.close(); }

 private:
  static GroupMemberOptions options(const std::shared_ptr<Registration>& registration) {
    GroupMemberOptions options;
    options.on_state = [registration](PersistentNodeState s) { (*registration)(s); };
    return options;
  }

  const MemberSettings settings_;
  const std::string node_;
  const std::shared_ptr<Registration> registration_ = std::make_shared<Registration>();
  GroupMember member_;
};

}  // namespace

std::string member_help() {
  return "Usage: zkr member GROUP --id ID [options] [--] CMD [ARGS...]\n"
         "\n"
         "Runs CMD only while registered as the member ID of the group GROUP, so that\n"
         "whoever watches the group (`zkr members GROUP`, a GroupMember of zkrecipes\n"
         "or Apache Curator) sees this service exactly while it runs. The member is\n"
         "the ephemeral node GROUP/ID, with --data as its data (Curator's GroupMember\n"
         "layout). Options after CMD belong to CMD.\n"
         "\n"
         "An ID is one member: if another live session holds GROUP/ID (the same ID\n"
         "started twice, or a restart before the old session expired), zkr never\n"
         "takes it over. Without --timeout it exits at once with 73; with --timeout\n"
         "it waits for that session's node to go, and exits 73 if it is still there\n"
         "when the timeout passes.\n"
         "\n"
         "CMD gets ZKR_MEMBER_GROUP, ZKR_MEMBER_ID and ZKR_MEMBER_NODE (GROUP/ID) in\n"
         "its environment.\n"
         "\n"
         "CMD is supervised exactly as under `zkr lock` (see zkr lock --help): it\n"
         "runs in a process group of its own, only while zkr can prove its\n"
         "registration, and is killed if zkr dies. If the registration is lost while\n"
         "it runs (the session expired, or our node was deleted), its group gets\n"
         "SIGTERM, then SIGKILL after --kill-after. When CMD's group is gone zkr\n"
         "leaves the group (our node is deleted), and exits with CMD's code if the\n"
         "server confirmed that it was registered throughout.\n"
         "\n"
         "Options:\n" +
         format_options(member_specs()) + "\n" + connection_help_footer() +
         "\n"
         "Exit status (zkr lock's, with the registration for the lock):\n"
         "  CMD's own      CMD ran, and the server confirmed after it ended that this\n"
         "                 member was registered throughout\n"
         "  64             bad usage: options, GROUP, --id, durations\n"
         "  69             ZooKeeper unreachable within --connect-timeout, or the link failed\n"
         "  73             GROUP/ID is held by another live session: not registered,\n"
         "                 CMD not run\n"
         "  75             not registered within --timeout (CMD not run)\n"
         "  76             ZooKeeper refused an operation (e.g. no permission on GROUP)\n"
         "  79             the registration was lost (or could not be confirmed) while\n"
         "                 CMD ran; its group was terminated\n"
         "  126, 127       CMD could not be run, or was not found\n"
         "  128+S          zkr got signal S while registering\n"
         "--status-file PATH tells them apart from CMD's own codes as under zkr lock:\n"
         "outcome held_throughout, lock_lost (registration lost), refused, timeout,\n"
         "command_not_run, interrupted or error.\n"
         "\n"
         "Example: a search server, listed in /services/search while it serves\n"
         "  zkr member /services/search --id \"$(hostname)\" --data 10.0.0.7:8080 -- "
         "./search --serve\n";
}

int member_main(const std::vector<std::string>& args) {
  const auto plan = [](const ParsedArgs& parsed) {
    const auto settings = member_settings(parsed);
    const std::string node = join_path(settings.group, settings.id);
    return plan_of<Membership>(node, "membership of " + node, settings);
  };
  return run_grant_verb(
      {.name = "member", .specs = member_specs(), .help = member_help, .plan = plan}, args);
}

}  // namespace zkr::cli
