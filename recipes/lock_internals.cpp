// LockInternals' own members: checking a lock's settings, running attempts
// (attempt.hpp) one session after another until one grants or gives up, the
// blocking acquire over that, and the holder text. The attempt's stages are
// in attempt*.cpp, a grant's watch and release in grant_watch.cpp.
#include "lock_internals.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <future>
#include <utility>

#include "attempt.hpp"
#include "attempt_inbox.hpp"
#include "client_internals.hpp"
#include "lock_driver.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {

LockInternals::LockInternals(Client& client, std::string dir, LockOptions options, QueueKind kind,
                             std::optional<LeaseQueue> leases)
    : client_(client),
      dir_(std::move(dir)),
      options_(std::move(options)),
      kind_(kind),
      leases_(std::move(leases)),
      holder_(checked_holder_id(options_.holder_id)),
      create_options_{.acl = options_.acl.value_or(open_acl_unsafe()), .ttl = {}},
      directories_(DirectoryRegistry::of(client)),
      observed_(observe_lock(client, kind_, leases_.has_value(), dir_)) {
  validate_path(dir_);
  if (dir_ == "/") throw std::invalid_argument("a lock path cannot be the root \"/\"");
  if (options_.directory_grace < std::chrono::milliseconds::zero())
    throw std::invalid_argument("LockOptions::directory_grace is negative");
  directories_->attach(dir_);
}

LockInternals::~LockInternals() {
  // Touches only the registry: the Client may be gone (then it is closed).
  directories_->detach(dir_, options_.remove_directory_on_release);
}

namespace {

// An acquire whose end is told to the observer: a coroutine around it only
// when someone observes, so that a lock without an observer pays no frame.
Task<std::shared_ptr<GrantState>> observed_acquire(Task<std::shared_ptr<GrantState>> acquire,
                                                   std::shared_ptr<const ObservedLock> observed,
                                                   std::stop_token stop) {
  const auto since = Clock::now();
  std::shared_ptr<GrantState> grant;
  std::exception_ptr failure;
  try {
    grant = co_await acquire;
  } catch (...) {
    failure = std::current_exception();
  }
  tell_wait_ended(*observed, since, grant != nullptr, stop.stop_requested(), failure != nullptr);
  if (failure) std::rethrow_exception(failure);
  co_return grant;
}

}  // namespace

// Attempt::acquire, in attempt.cpp: one coroutine for the whole acquire.
Task<std::shared_ptr<GrantState>> LockInternals::acquisition(Deadline deadline,
                                                             const HeldWriteNode* held_write,
                                                             std::stop_token stop,
                                                             std::shared_ptr<GrantState> under) {
  if (!observed_)
    return Attempt::acquire(*this, deadline, held_write, std::move(stop), std::move(under));
  auto acquire = Attempt::acquire(*this, deadline, held_write, stop, std::move(under));
  return observed_acquire(std::move(acquire), observed_, std::move(stop));
}

// The retry policy's pause before queueing again in a new session, on the
// timer (a stop ends it early). False: past the deadline. Throws once the
// policy gives up.
Task<bool> LockInternals::pause_after_session_loss(RetryBudget& budget, AttemptInbox& inbox) {
  const auto step = budget.next();
  if (step.verdict == RetryBudget::Verdict::give_up)
    throw KeeperError(Errc::session_expired, dir_,
                      "the session ended while acquiring the lock, and the retry policy gave up");
  if (step.verdict == RetryBudget::Verdict::past_deadline) co_return false;
  detail::ClientInternals::log(client_)->info("lock {}: session ended while queued; queueing again",
                                              dir_);
  tell_retry(observed_, budget.retries(), step.delay);
  const auto delay = budget.timer_delay(step);
  if (delay > milliseconds::zero()) {
    const auto until = Clock::now() + delay;
    while (co_await inbox.until(until))
      if (inbox.stopped()) break;
  }
  co_return true;
}

std::shared_ptr<GrantState> LockInternals::acquire(Deadline deadline,
                                                   const std::optional<HeldWriteNode>& held_write,
                                                   std::stop_token stop,
                                                   std::shared_ptr<GrantState> under) {
  // Shared with the callback, which may still be returning from set_value
  // when this thread wakes and leaves.
  const auto granted = std::make_shared<std::promise<std::shared_ptr<GrantState>>>();
  auto outcome = granted->get_future();
  spawn(
      acquisition(deadline, held_write ? &*held_write : nullptr, std::move(stop), std::move(under)),
      [granted](std::exception_ptr error, std::optional<std::shared_ptr<GrantState>> grant) {
        if (error) granted->set_exception(error);
        else granted->set_value(std::move(*grant));
      });
  return outcome.get();
}

// Sends the delete and returns: the session's later requests (the next
// acquire's create, say) are ordered after it by the server. The registry
// looks at the reply; a lost one hands the delete to the background remover.
// (Only when no read proves the node ours, after a watch event or a failed
// read of it, does a read go first: then the next requests may overtake the
// delete, and an acquire of the same lock may find our old node still there
// and wait for it.)
void LockInternals::release(const std::shared_ptr<GrantState>& grant) noexcept {
  release_node(client_, grant);
}

void LockInternals::adopt_next(std::string node_name) {
  std::lock_guard lock(adopt_mutex_);
  adopt_next_ = std::move(node_name);
}

std::string LockInternals::take_adoption() {
  std::lock_guard lock(adopt_mutex_);
  return std::exchange(adopt_next_, {});
}

std::vector<std::string> LockInternals::participant_nodes() const {
  const auto names = client_.with_retry([&](Keeper& keeper) {
    auto listed = keeper.try_children(dir_);
    if (listed.error() == Errc::no_node) return std::vector<std::string>{};
    return std::move(listed).value().names;  // throws: retried if retryable
  });
  std::vector<std::string> paths;
  for (const auto& name :
       sorted_queue_nodes(names, family_of(kind_), QueuePeers{options_.share_with_kazoo}))
    paths.push_back(join_path(dir_, name));
  return paths;
}

std::string checked_holder_id(const std::string& holder_id) {
  if (holder_id.empty()) return default_holder_id();
  if (holder_id.size() > kMaxHolderIdLength)
    throw std::invalid_argument("LockOptions::holder_id is " + std::to_string(holder_id.size()) +
                                " bytes long; " + std::to_string(kMaxHolderIdLength) + " at most");
  for (std::size_t i = 0; i < holder_id.size(); ++i) {
    const auto c = static_cast<unsigned char>(holder_id[i]);
    if (c < 0x20 || c == 0x7f)
      throw std::invalid_argument("LockOptions::holder_id has a control character (byte " +
                                  std::to_string(c) + ") at offset " + std::to_string(i) +
                                  "; it is text for operators, one line of printable characters");
  }
  return holder_id;
}

std::string default_holder_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return "host=" + std::string(host) + ";pid=" + std::to_string(::getpid()) +
         ";thread=" + std::to_string(::gettid());
}

}  // namespace zkr::detail
