// A reply awaited after it was sent (pending_reply.hpp): one that came before
// the wait is taken without suspending; one that comes later resumes the
// waiter on the replying thread; the deadline ends the wait on the timer
// thread, and a reply after it is dropped; replies sent back to back are
// awaited in turn.
#include "pending_reply.hpp"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "task.hpp"

namespace zkr::detail {
namespace {

using namespace std::chrono_literals;
using Clock = TimerThread::Clock;

struct Outcome {
  std::string reply;
  std::thread::id on;
};

Task<Outcome> await_one(TimerThread& timers, PendingReply<std::string> pending,
                        Clock::time_point deadline) {
  auto reply = co_await pending.until(timers, deadline, "timeout");
  co_return Outcome{std::move(reply), std::this_thread::get_id()};
}

template <class T>
std::future<T> start(Task<T> task) {
  auto done = std::make_shared<std::promise<T>>();
  auto result = done->get_future();
  spawn(std::move(task), [done](std::exception_ptr error, std::optional<T> out) {
    if (error) done->set_exception(error);
    else done->set_value(std::move(*out));
  });
  return result;
}

TEST(PendingReply, AReplyBeforeTheWaitIsTakenWithoutSuspending) {
  TimerThread timers;
  PendingReply<std::string> pending;
  pending.handler()("early");
  auto waited = start(await_one(timers, pending, Clock::now() + 1h));
  ASSERT_EQ(waited.wait_for(0s), std::future_status::ready);
  const auto out = waited.get();
  EXPECT_EQ(out.reply, "early");
  EXPECT_EQ(out.on, std::this_thread::get_id());
}

TEST(PendingReply, ALaterReplyResumesTheWaiterOnTheReplyingThread) {
  TimerThread timers;
  PendingReply<std::string> pending;
  auto waited = start(await_one(timers, pending, Clock::now() + 1h));
  EXPECT_EQ(waited.wait_for(50ms), std::future_status::timeout);
  std::thread replier([handler = pending.handler()] { handler("late"); });
  const auto replier_id = replier.get_id();
  replier.join();
  ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
  const auto out = waited.get();
  EXPECT_EQ(out.reply, "late");
  EXPECT_EQ(out.on, replier_id);
}

TEST(PendingReply, TheDeadlineEndsTheWaitAndALaterReplyIsDropped) {
  TimerThread timers;
  PendingReply<std::string> pending;
  const auto handler = pending.handler();
  const auto deadline = Clock::now() + 50ms;
  auto waited = start(await_one(timers, pending, deadline));
  ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
  EXPECT_GE(Clock::now(), deadline);
  const auto out = waited.get();
  EXPECT_EQ(out.reply, "timeout");
  EXPECT_NE(out.on, std::this_thread::get_id());
  handler("too late");  // nobody waits: dropped, and nothing resumed twice
}

Task<std::string> await_in_turn(TimerThread& timers, std::vector<PendingReply<std::string>> sent) {
  std::string replies;
  for (auto& reply : sent) replies += co_await reply.until(timers, Clock::now() + 10s, "-");
  co_return replies;
}

TEST(PendingReply, RepliesSentBackToBackAreAwaitedInTurnWhateverTheirOrder) {
  TimerThread timers;
  std::vector<PendingReply<std::string>> sent(3);
  sent[1].handler()("b");  // came before the wait began
  auto waited = start(await_in_turn(timers, sent));
  sent[2].handler()("c");  // before its turn
  std::thread([h = sent[0].handler()] { h("a"); }).join();
  ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(waited.get(), "abc");
}

}  // namespace
}  // namespace zkr::detail
