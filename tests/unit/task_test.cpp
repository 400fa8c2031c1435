// The coroutine layer the event-driven lock attempt is written in (task.hpp):
// results and errors pass through co_await, nothing runs before it is
// awaited, a reply may come before or after the wait begins and on any
// thread, and long chains do not grow the stack.
#include "task.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/fake_keeper.hpp"

namespace zkr::detail {
namespace {

using namespace std::chrono_literals;

Task<int> number(int n) { co_return n; }

Task<int> sum_of_numbers(int count) {
  int total = 0;
  for (int i = 1; i <= count; ++i) total += co_await number(i);
  co_return total;
}

Task<int> fails(const std::string& why) {
  throw std::runtime_error(why);
  co_return 0;
}

Task<std::string> catches() {
  try {
    (void)co_await fails("inner");
  } catch (const std::runtime_error& e) {
    co_return std::string("caught ") + e.what();
  }
  co_return "not thrown";
}

// Runs a task to its end on this thread (it must not wait for anything
// else), and returns what spawn's callback was given.
template <class T>
std::pair<std::exception_ptr, std::optional<T>> run(Task<T> task) {
  std::pair<std::exception_ptr, std::optional<T>> out;
  bool done = false;
  spawn(std::move(task), [&](std::exception_ptr error, std::optional<T> value) {
    out = {error, std::move(value)};
    done = true;
  });
  EXPECT_TRUE(done) << "the task waited for something";
  return out;
}

TEST(Task, ValuesPassThroughAwaits) {
  auto [error, value] = run(sum_of_numbers(100));
  EXPECT_FALSE(error);
  EXPECT_EQ(value, 5050);
}

TEST(Task, NothingRunsUntilAwaitedOrSpawned) {
  bool ran = false;
  auto body = [&]() -> Task<void> {
    ran = true;
    co_return;
  };
  {
    auto task = body();
    EXPECT_FALSE(ran);
  }  // destroyed unstarted: its frame is freed, its body never runs
  EXPECT_FALSE(ran);
  bool done = false;
  spawn(body(), [&](std::exception_ptr error) { done = !error; });
  EXPECT_TRUE(ran);
  EXPECT_TRUE(done);
}

TEST(Task, ErrorsReachTheAwaiterAndSpawnsCallback) {
  EXPECT_EQ(run(catches()).second, "caught inner");
  auto [error, value] = run(fails("outer"));
  ASSERT_TRUE(error);
  EXPECT_FALSE(value);
  EXPECT_THROW(std::rethrow_exception(error), std::runtime_error);
}

Task<int> one() { co_return 1; }

Task<int> count_children(int count) {
  int total = 0;
  for (int i = 0; i < count; ++i) total += co_await one();
  co_return total;
}

// A million children that finish at once: each hands control back by
// returning, so the stack does not grow with them (not even in a sanitizer
// build, where GCC does not make symmetric transfer a tail call).
TEST(Task, AMillionChildrenDoNotGrowTheStack) {
  EXPECT_EQ(run(count_children(1'000'000)).second, 1'000'000);
}

// A reply given before the send returns (a request refused at once) goes on
// without suspending, so a million of them do not grow the stack either.
TEST(Task, RepliesGivenAtOnceDoNotSuspend) {
  auto body = []() -> Task<int> {
    int total = 0;
    for (int i = 0; i < 1'000'000; ++i)
      total += co_await reply<int>([](auto on_reply) { on_reply(1); });
    co_return total;
  };
  EXPECT_EQ(run(body()).second, 1'000'000);
}

// A reply given later, on another thread, resumes the coroutine there.
TEST(Task, AReplyGivenLaterResumesOnTheReplyingThread) {
  std::mutex mutex;
  std::condition_variable sent;
  std::function<void(int)> pending;  // guarded by mutex
  auto body = [&]() -> Task<std::thread::id> {
    const int got = co_await reply<int>([&](std::function<void(int)> on_reply) {
      std::lock_guard lock(mutex);
      pending = std::move(on_reply);
      sent.notify_all();
    });
    EXPECT_EQ(got, 42);
    co_return std::this_thread::get_id();
  };
  std::promise<std::thread::id> resumed_on;
  spawn(body(), [&](std::exception_ptr error, std::optional<std::thread::id> id) {
    if (error) resumed_on.set_exception(error);
    else resumed_on.set_value(*id);
  });
  std::thread replier([&] {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(sent.wait_for(lock, 10s, [&] { return bool(pending); }));
    auto answer = std::move(pending);
    lock.unlock();
    answer(42);
  });
  const auto replier_id = replier.get_id();
  replier.join();
  auto result = resumed_on.get_future();
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(result.get(), replier_id);
}

// Against the in-memory keeper: requests sent from the coroutine, replies
// handed back on the keeper's event thread, in the order they were sent.
TEST(Task, AwaitsKeeperRepliesInSendOrder) {
  test::FakeEnsemble ensemble;
  auto keeper = ensemble.connect();
  auto body = [&]() -> Task<std::vector<std::string>> {
    std::vector<std::string> seen;
    (void)co_await reply<Result<Created>>([&](auto on_reply) {
      keeper->async_create("/q", "", CreateMode::persistent, {}, std::move(on_reply));
    });
    for (int i = 0; i < 5; ++i) {
      auto created = co_await reply<Result<Created>>([&](auto on_reply) {
        keeper->async_create("/q/n-", "", CreateMode::persistent_sequential, {},
                             std::move(on_reply));
      });
      seen.push_back(created.value().path);
    }
    auto listed = co_await reply<Result<Children>>(
        [&](auto on_reply) { keeper->async_children("/q", {}, std::move(on_reply)); });
    seen.push_back(std::to_string(listed.value().names.size()) + " children");
    auto missing = co_await reply<Result<Empty>>(
        [&](auto on_reply) { keeper->async_remove("/none", kAnyVersion, std::move(on_reply)); });
    seen.push_back(std::string(errc_name(missing.error())));
    co_return seen;
  };
  std::promise<std::vector<std::string>> out;
  spawn(body(), [&](std::exception_ptr error, std::optional<std::vector<std::string>> seen) {
    if (error) out.set_exception(error);
    else out.set_value(std::move(*seen));
  });
  auto seen = out.get_future();
  ASSERT_EQ(seen.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(seen.get(), (std::vector<std::string>{"/q/n-0000000000", "/q/n-0000000001",
                                                  "/q/n-0000000002", "/q/n-0000000003",
                                                  "/q/n-0000000004", "5 children", "no_node"}));
}

}  // namespace
}  // namespace zkr::detail
