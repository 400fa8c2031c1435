// CKeeper's multi (c_keeper.hpp): building the C client's operations, the
// refusal that keeps zoo_amulti() off a handle whose session is over, and the
// reading of its results. Apart because the multi has its own completion and
// its own facts about the C client (c_keeper_internals.hpp: zoo_amulti()
// frees memory it should not once an operation fails to build).
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "c_keeper_internals.hpp"
#include "keeper_arguments.hpp"

namespace zkr {
namespace ckeeper {
namespace {

struct MultiCompletion final : Pending {
  enum class Kind { create, remove, set, check };
  MultiCompletion(Shared* s, std::vector<Op> o, ReplyHandler<MultiResult> h)
      : Pending(s, {}),
        handler(std::move(h)),
        ops(std::move(o)),
        kinds(ops.size()),
        c_ops(ops.size()),
        results(ops.size()),
        created(ops.size()),
        stats(ops.size()) {}
  std::function<void()> failure(Errc e) override {
    MultiResult result;
    result.error = e;
    return [h = std::move(handler), r = std::move(result)]() mutable { h(std::move(r)); };
  }
  void answer(MultiResult r) { std::exchange(handler, {})(std::move(r)); }
  ReplyHandler<MultiResult> handler;
  std::vector<Op> ops;  // the strings c_ops point at
  std::vector<Kind> kinds;
  std::vector<zoo_op_t> c_ops;
  // Written by the C client until the completion runs:
  std::vector<zoo_op_result_t> results;
  std::vector<std::string> created;  // created paths, NUL-terminated in place
  std::vector<::Stat> stats;         // stats of set operations
};

// Codes for which the server did not answer the multi operation by operation:
// the outcome is unknown (or, throttled, nothing was done).
bool multi_failed_as_a_whole(Errc e) {
  return is_connection_error(e) || e == Errc::throttled_op || e == Errc::marshalling_error ||
         e == Errc::system_error;
}

void on_multi(int rc, const void* data) {
  auto c = claim<MultiCompletion>(data);
  if (!settle(*c, rc, false)) return;
  MultiResult out;
  out.error = errc_from_int(rc);
  if (!multi_failed_as_a_whole(out.error)) {
    out.results.reserve(c->results.size());
    for (std::size_t i = 0; i < c->results.size(); ++i) {
      OpResult r;
      r.error = errc_from_int(c->results[i].err);
      // In a failed multi the server reports the operations before the failed
      // one as ok (and those after as runtime_inconsistency), though all were
      // rolled back. No result may say ok when nothing was applied.
      if (out.error != Errc::ok && r.error == Errc::ok) r.error = Errc::runtime_inconsistency;
      if (r.error == Errc::ok && c->kinds[i] == MultiCompletion::Kind::create)
        r.path = c->created[i].c_str();
      if (r.error == Errc::ok && c->kinds[i] == MultiCompletion::Kind::set)
        r.stat = to_stat(c->stats[i]);
      out.results.push_back(std::move(r));
    }
  }
  c->answer(std::move(out));
}

// Why zoo_amulti() must not be called now, as its return code, or ZOK. It
// corrupts memory on a handle whose session is over (see the facts in
// c_keeper_internals.hpp), so it is called only on a connected one: a session
// is found over only by a reconnection's handshake, which the C client's I/O
// thread would have to complete between this check and the call. While
// connecting, the handshake's answer may come at any moment, so a multi then
// is refused as not sent (connection loss) rather than queued.
int multi_refusal(zhandle_t* zh) {
  const int state = zoo_state(zh);
  if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) return ZINVALIDSTATE;
  if (state != ZOO_CONNECTED_STATE && state != ZOO_READONLY_STATE) return ZCONNECTIONLOSS;
  return ZOK;
}

}  // namespace
}  // namespace ckeeper

using namespace ckeeper;

void CKeeper::send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) {
  detail::check_multi(ops);
  auto c = std::make_unique<MultiCompletion>(shared_.get(), std::move(ops), std::move(on_reply));
  std::vector<std::unique_ptr<CAclList>> acls;  // serialised inside zoo_amulti
  for (std::size_t i = 0; i < c->ops.size(); ++i) {
    zoo_op_t* out = &c->c_ops[i];
    if (auto* create = std::get_if<op::Create>(&c->ops[i])) {
      c->kinds[i] = MultiCompletion::Kind::create;
      acls.push_back(std::make_unique<CAclList>(create->options.acl ? *create->options.acl
                                                                    : shared_->default_acl));
      // Room for the sequence suffix: 10 digits, or 11 once the counter wraps.
      c->created[i].assign(create->path.size() + 16, '\0');
      zoo_create_op_init(out, create->path.c_str(), create->data.data(),
                         static_cast<int>(create->data.size()), acls.back()->get(),
                         c_mode(create->mode), c->created[i].data(),
                         static_cast<int>(c->created[i].size()));
    } else if (auto* remove = std::get_if<op::Remove>(&c->ops[i])) {
      c->kinds[i] = MultiCompletion::Kind::remove;
      zoo_delete_op_init(out, remove->path.c_str(), remove->version);
    } else if (auto* set = std::get_if<op::Set>(&c->ops[i])) {
      c->kinds[i] = MultiCompletion::Kind::set;
      zoo_set_op_init(out, set->path.c_str(), set->data.data(), static_cast<int>(set->data.size()),
                      set->version, &c->stats[i]);
    } else {
      const auto& check = std::get<op::Check>(c->ops[i]);
      c->kinds[i] = MultiCompletion::Kind::check;
      zoo_check_op_init(out, check.path.c_str(), check.version);
    }
  }
  send_open(std::move(c), [&](MultiCompletion* raw) {
    if (const int refused = multi_refusal(handle_); refused != ZOK) return refused;
    return zoo_amulti(handle_, static_cast<int>(raw->c_ops.size()), raw->c_ops.data(),
                      raw->results.data(), &on_multi, raw);
  });
}

}  // namespace zkr
