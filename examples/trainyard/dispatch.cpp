#include "dispatch.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace trainyard {
namespace {

// Reads every field and nothing after them: a record with extra text is not one.
template <class... Fields>
bool read_exactly(const std::string& data, Fields&... fields) {
  std::istringstream in(data);
  if (!(in >> ... >> fields)) return false;
  in >> std::ws;
  return in.eof();
}

std::string batch_name(const Batch& b) {
  return "[" + std::to_string(b.first) + ", " + std::to_string(b.first + b.count) + ") epoch " +
         std::to_string(b.epoch);
}

}  // namespace

std::string encode(const Cursor& c) {
  return std::to_string(c.next) + " " + std::to_string(c.epoch) + " " + std::to_string(c.slot);
}

std::string encode(const Batch& b) {
  return std::to_string(b.first) + " " + std::to_string(b.count) + " " + std::to_string(b.epoch);
}

std::optional<Cursor> decode_cursor(const std::string& data) {
  Cursor c;
  if (!read_exactly(data, c.next, c.epoch, c.slot) || c.next < 0 || c.epoch < 0)
    return std::nullopt;
  return c;
}

std::optional<Batch> decode_batch(const std::string& data) {
  Batch b;
  if (!read_exactly(data, b.first, b.count, b.epoch) || b.first < 0 || b.count < 1 || b.epoch < 1)
    return std::nullopt;
  return b;
}

Batch next_batch(const Cursor& cursor, int total, int size, std::int64_t epoch) {
  if (size < 1) throw std::invalid_argument("batch size below 1");
  if (cursor.next < 0 || cursor.next > total)
    throw std::invalid_argument("cursor " + std::to_string(cursor.next) + " outside [0, " +
                                std::to_string(total) + "]");
  return {cursor.next, std::min(size, total - cursor.next), epoch};
}

Cursor advance(const Cursor& cursor, const Batch& batch, int slot) {
  return {cursor.next + batch.count, batch.epoch, slot};
}

std::vector<Invariant> check_published(int total, const Cursor& cursor,
                                       std::vector<PublishedBatch> batches) {
  std::sort(batches.begin(), batches.end(),
            [](const PublishedBatch& a, const PublishedBatch& b) { return a.czxid < b.czxid; });
  Invariant once{"every message published exactly once and in order"};
  Invariant rising{"epochs only rise across publishes"};
  Invariant deposed{
      "no publish by a deposed leader accepted (epochs never fall, each batch "
      "written within its term)"};
  int next = 0;
  std::int64_t epoch = 0;
  for (const auto& [b, czxid] : batches) {
    if (b.first != next)
      violated(once, "batch " + batch_name(b) + " follows message " + std::to_string(next - 1) +
                         (b.first < next ? ": published twice" : ": messages skipped"));
    next = std::max(next, b.first + b.count);
    if (b.epoch < epoch) {
      violated(rising, "batch " + batch_name(b) + " after epoch " + std::to_string(epoch));
      violated(deposed, "batch " + batch_name(b) + " accepted after epoch " +
                            std::to_string(epoch) + " had published");
    }
    if (b.epoch >= czxid)
      violated(deposed, "batch " + batch_name(b) + " created at zxid " + std::to_string(czxid) +
                            ", not after its term began");
    epoch = std::max(epoch, b.epoch);
  }
  if (next != total)
    violated(once, "the batches end at " + std::to_string(next) + " of " + std::to_string(total));
  if (cursor.next != total || cursor.epoch != epoch)
    violated(once, "the cursor says " + encode(cursor) + " (next epoch slot), the batches " +
                       std::to_string(next) + " by epoch " + std::to_string(epoch));
  return {once, rising, deposed};
}

Invariant check_failovers(const std::vector<Failover>& failovers, int wanted) {
  Invariant i{"the leading dispatcher was killed at least " + std::to_string(wanted) +
              " times, and a newer epoch took over each time"};
  if (static_cast<int>(failovers.size()) < wanted)
    violated(i, std::to_string(failovers.size()) + " failover(s)");
  for (const auto& f : failovers)
    if (f.new_epoch <= f.old_epoch)
      violated(i, "after epoch " + std::to_string(f.old_epoch) +
                      (f.new_epoch == 0 ? ": no new leader published"
                                        : ": epoch " + std::to_string(f.new_epoch)));
  return i;
}

std::string encode(const DispatcherStats& s) {
  return std::to_string(s.done ? 1 : 0) + " " + std::to_string(s.refused);
}

std::optional<DispatcherStats> decode_dispatcher_stats(const std::string& data) {
  DispatcherStats s;
  int done = 0;
  if (!read_exactly(data, done, s.refused) || s.refused < 0) return std::nullopt;
  s.done = done != 0;
  return s;
}

}  // namespace trainyard
