#include "leadership.hpp"

#include <future>
#include <memory>
#include <optional>

#include "callback_thread.hpp"
#include "client_internals.hpp"

namespace zkr::detail {

std::vector<Participant> read_participants(Client& client, const std::vector<std::string>& nodes,
                                           std::size_t limit) {
  std::vector<Participant> found;
  for (const auto& node : nodes) {
    if (found.size() == limit) break;
    auto data = client.with_retry([&](Keeper& keeper) {
      auto read = keeper.try_get(node);
      if (read.error() == Errc::no_node) return std::optional<std::string>();
      return std::optional<std::string>(std::move(read).value().data);
    });
    if (!data) continue;
    found.push_back({std::move(*data), found.empty()});
  }
  return found;
}

void await_lost_signal(Client& client, const Grant& lost) {
  // Callbacks run in order on the callback thread: once one added now has
  // run, every earlier one has.
  const auto callbacks = ClientInternals::callback_thread(client);
  if (!callbacks || callbacks->on_thread()) return;
  auto delivered = std::make_shared<std::promise<void>>();
  auto done = delivered->get_future();
  lost.on_lost([delivered](LostReason) { delivered->set_value(); });
  done.wait();
}

}  // namespace zkr::detail
