// Coroutines for the event-driven lock attempt: a lock attempt
// written as straight-line code that waits for replies with co_await, and so
// parks no thread while it waits. It runs on whichever thread resumes it: the
// caller's until its first wait, then the Keeper's event thread (replies and
// watch events) or the timer thread (deadlines; and connection states and
// stops, handed over to it: a lock attempt must not run on the Client's
// listener thread, where an acquire is refused). So code between two
// co_awaits must not block.
//
//   Task<int> child();
//   Task<int> parent() { co_return 1 + co_await child(); }
//   spawn(parent(), [](std::exception_ptr error, int value) { ... });
//
//   auto listed = co_await reply<Result<Children>>(
//       [&](auto on_reply) { keeper->async_children(dir, {}, std::move(on_reply)); });
#pragma once

#include <atomic>
#include <coroutine>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace zkr::detail {

template <class T>
class Task;

namespace task_internal {

template <class T, class F>
struct Spawned;
struct SpawnedBase;

// What every Task's promise has: who awaits it, and how it ended.
//
// A child that finishes before its awaiter has suspended (it never had to
// wait) hands control back by returning, and the awaiter goes on without
// suspending; one that finishes later resumes its awaiter. Whichever of the
// two, the awaiter's await_suspend or the child's end, comes second decides.
// (Symmetric transfer would do without the flag, but GCC makes it a tail
// call only when optimizing: in a sanitizer build a loop over children that
// finish at once would grow the stack by each one.)
struct PromiseBase {
  // Who goes on once this ends: the awaiting coroutine, or for a task
  // spawn() started, the heap record that owns it (see Spawned). One
  // slot for both: a frame is allocated per waiting coroutine, thousands
  // of them.
  union {
    std::coroutine_handle<> continuation{};  // unless `spawned`
    SpawnedBase* owner;                      // if `spawned`
  };
  std::atomic<bool> one_done{false};  // see above
  bool spawned = false;               // set by spawn() before the task starts
  std::exception_ptr error;

  std::suspend_always initial_suspend() noexcept { return {}; }  // lazy: runs when awaited
  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <class P>
    void await_suspend(std::coroutine_handle<P> done) noexcept {
      PromiseBase& promise = done.promise();
      if (promise.spawned) return finish_spawned(promise.owner);  // destroys this frame
      // The awaiter may destroy this frame as soon as it resumes: nothing
      // here touches it after.
      if (promise.one_done.exchange(true, std::memory_order_acq_rel)) promise.continuation.resume();
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  static void finish_spawned(SpawnedBase* owner) noexcept;
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <class U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T take() {
    if (error) std::rethrow_exception(error);
    return std::move(*value);
  }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace task_internal

// A coroutine that yields a T (or throws). Lazy: nothing runs until it is
// awaited or spawned. Owns its frame; move-only; awaited at most once.
template <class T = void>
class [[nodiscard]] Task {
 public:
  using promise_type = task_internal::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Task(const Task&) = delete;
  ~Task() {
    if (handle_) handle_.destroy();
  }

  // co_await task: starts it, and resumes the awaiter with its result. The
  // task is its own awaiter: an awaiter object apart would be one more slot
  // in the awaiting frame for every co_await in it, and frames of waiting
  // coroutines are allocated by the thousand.
  bool await_ready() noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> awaiting) noexcept {
    handle_.promise().continuation = awaiting;
    handle_.resume();
    // Finished already: go on without suspending (see PromiseBase).
    return !handle_.promise().one_done.exchange(true, std::memory_order_acq_rel);
  }
  T await_resume() { return handle_.promise().take(); }

 private:
  template <class U, class F>
  friend void spawn(Task<U> task, F on_done);
  template <class U, class F>
  friend struct task_internal::Spawned;
  friend promise_type;
  explicit Task(Handle h) noexcept : handle_(h) {}
  Handle handle_;
};

namespace task_internal {

template <class T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

// What spawn() leaves on the heap while the task runs: the task, and the
// callback for its outcome. A record rather than a coroutine awaiting the
// task: its frame would hold the callback, the outcome and an awaiter as
// long as the task waits, and spawned tasks wait by the thousand. The
// task's final suspension calls end(), which hands the outcome on and
// frees the record, the task's frame with it.
struct SpawnedBase {
  void (*finish)(SpawnedBase* self) noexcept;
};

inline void PromiseBase::finish_spawned(SpawnedBase* owner) noexcept { owner->finish(owner); }

template <class T, class F>
struct Spawned : SpawnedBase {
  Spawned(Task<T> t, F f) : SpawnedBase{&Spawned::end}, task(std::move(t)), on_done(std::move(f)) {}

  static void end(SpawnedBase* base) noexcept {
    // on_done must not throw (noexcept: a throw terminates, as before).
    const std::unique_ptr<Spawned> self(static_cast<Spawned*>(base));
    auto& promise = self->task.handle_.promise();
    if constexpr (std::is_void_v<T>) {
      self->on_done(promise.error);
    } else {
      std::optional<T> value;
      if (!promise.error) value.emplace(std::move(*promise.value));
      self->on_done(promise.error, std::move(value));
    }
  }  // the task's frame goes with `self`

  Task<T> task;
  F on_done;
};

}  // namespace task_internal

// Starts `task` on this thread, without waiting for it. When it ends, on the
// thread that ran its last step, calls on_done(error) for a Task<void>, or
// on_done(error, optional<T>) (empty when error is set). on_done must not throw.
template <class T, class F>
void spawn(Task<T> task, F on_done) {
  auto* owner = new task_internal::Spawned<T, F>(std::move(task), std::move(on_done));
  const auto handle = owner->task.handle_;
  handle.promise().owner = owner;
  handle.promise().spawned = true;
  handle.resume();  // may end, and free owner, before it returns
}

// co_await reply<R>(send): calls send(handler) and resumes with the R that
// handler is given. The handler may be called on any thread, before send
// returns or later, but exactly once (the Keeper's promise to every request).
template <class R, class Send>
auto reply(Send send) {
  struct Awaiter {
    Send send;
    std::optional<R> result;
    std::coroutine_handle<> waiting;
    // Whoever comes second, of await_suspend returning and the handler
    // running, resumes the coroutine.
    std::atomic<bool> one_done{false};

    bool await_ready() noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      waiting = h;
      send([this](R r) {
        result.emplace(std::move(r));
        if (one_done.exchange(true, std::memory_order_acq_rel)) waiting.resume();
      });
      // The handler ran already (a request refused before it was sent): go on.
      return !one_done.exchange(true, std::memory_order_acq_rel);
    }
    R await_resume() { return std::move(*result); }
  };
  return Awaiter{std::move(send), {}, {}, {}};
}

}  // namespace zkr::detail
