// GroupMember: a PersistentNode for our registration beside a ChildrenCache
// of the group. It adds nothing of its own to either but the layout
// (`<group>/<id>`, ephemeral, data = payload) and the member list.
#include "zkr/group_member.hpp"

#include <mutex>
#include <stdexcept>
#include <utility>

#include "client_internals.hpp"
#include "grant_state.hpp"
#include "lock_internals.hpp"
#include "zkr/path.hpp"

namespace zkr {

namespace {

std::string checked_group(std::string group) {
  validate_path(group);
  if (group == "/") throw std::invalid_argument("GroupMember: the root cannot be a group");
  return group;
}

PersistentNodeOptions node_options(const GroupMemberOptions& options) {
  PersistentNodeOptions out;
  out.mode = CreateMode::ephemeral;
  out.acl = options.acl;
  out.on_state = options.on_state;
  return out;
}

ChildrenCacheOptions cache_options(const GroupMemberOptions& options) {
  ChildrenCacheOptions out;
  out.on_event = options.on_change;
  return out;
}

}  // namespace

void GroupMember::validate_member_id(std::string_view id) {
  try {
    validate_node_name(id);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("GroupMember: invalid member id: " + std::string(e.what()));
  }
}

struct GroupMember::Impl {
  Impl(Client& c, std::string g, std::string i, std::string data, const GroupMemberOptions& options)
      : client(c),
        group(checked_group(std::move(g))),
        id((validate_member_id(i), std::move(i))),
        node(c, join_path(group, id), std::move(data), node_options(options)),
        cache(c, group, cache_options(options)) {}

  // A registration handle of the node there now, if it is ours: the lock
  // recipes' own-node watch tells when it goes.
  std::optional<Grant> registration() {
    std::lock_guard lock(term_mutex);
    if (term && Grant(term).held()) return Grant(term);
    if (node.state() != PersistentNodeState::present) return std::nullopt;
    const auto session = client.session_when_connected();  // keeper and epoch, read together
    const auto stat = session.keeper->exists(node.path());
    if (!stat || stat->ephemeral_owner != session.keeper->session_id()) return std::nullopt;
    end_term();
    term = std::make_shared<detail::GrantState>(node.path(), stat->czxid, session.epoch,
                                                stat->ephemeral_owner,
                                                detail::ClientInternals::callback_thread(client));
    detail::watch_own_node(client, term, session.keeper);
    return Grant(term);
  }

  // Given back, not lost: our leaving is no loss. term_mutex held.
  void end_term() noexcept {
    if (!term) return;
    term->mark_released();
    detail::stop_watching(client, term);
    term.reset();
  }

  Client& client;
  const std::string group;
  const std::string id;
  PersistentNode node;
  ChildrenCache cache;
  std::mutex term_mutex;
  std::shared_ptr<detail::GrantState> term;  // guarded by term_mutex
};

GroupMember::GroupMember(Client& client, std::string group, std::string id, std::string data,
                         GroupMemberOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(group), std::move(id), std::move(data),
                                   options)) {}

GroupMember::~GroupMember() { close(); }

void GroupMember::start() {
  // The cache first: it then sees our node arrive, as any other member's.
  impl_->cache.start();
  impl_->node.start();
}

bool GroupMember::wait_until_registered(std::chrono::milliseconds timeout) const {
  return impl_->node.wait_until_present(timeout);
}

bool GroupMember::wait_until_initialized(std::chrono::milliseconds timeout) const {
  return impl_->cache.wait_until_initialized(timeout);
}

PersistentNodeState GroupMember::state() const { return impl_->node.state(); }

std::optional<std::string> GroupMember::refusal() const { return impl_->node.refusal(); }

void GroupMember::set_this_data(std::string data) { impl_->node.set_data(std::move(data)); }

std::map<std::string, std::string> GroupMember::current_members() const {
  std::map<std::string, std::string> members;
  for (auto& [name, child] : impl_->cache.snapshot()) members.emplace(name, std::move(child.data));
  // Our own entry is what we were told last, not what the cache read last:
  // a set_this_data() shows at once, as in Curator.
  if (impl_->node.state() == PersistentNodeState::present) members[impl_->id] = impl_->node.data();
  return members;
}

std::optional<Grant> GroupMember::registration() const { return impl_->registration(); }

void GroupMember::close() noexcept {
  {
    std::lock_guard lock(impl_->term_mutex);
    impl_->end_term();
  }
  // Leave first, then stop watching.
  impl_->node.close();
  impl_->cache.close();
}

const std::string& GroupMember::group() const noexcept { return impl_->group; }
const std::string& GroupMember::id() const noexcept { return impl_->id; }

}  // namespace zkr
