// The Prometheus observer (zkr/prometheus.hpp). Every series a label set can
// take is made at construction and kept by index, so that an event costs an
// array lookup and an atomic add, never a label lookup under the family's
// lock; and so that a scrape shows zeros rather than missing series.
#include "zkr/prometheus.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace zkr {
namespace {

using prometheus::Counter;
using prometheus::Histogram;

constexpr std::array kRecipes{Recipe::mutex,     Recipe::read,  Recipe::write,
                              Recipe::semaphore, Recipe::latch, Recipe::client};
constexpr std::array kWaitOutcomes{WaitOutcome::granted, WaitOutcome::timed_out,
                                   WaitOutcome::cancelled, WaitOutcome::failed};
constexpr std::array kHoldOutcomes{HoldOutcome::released, HoldOutcome::lost};
constexpr std::array kReasons{LostReason::suspended, LostReason::session_lost,
                              LostReason::node_deleted};
constexpr std::array kStates{ConnectionState::connected, ConnectionState::suspended,
                             ConnectionState::reconnected, ConnectionState::lost,
                             ConnectionState::read_only};
constexpr std::array kRequests{Request::create, Request::remove, Request::get, Request::exists,
                               Request::children};

// Seconds: a wait may last from a round trip to as long as a holder holds.
const Histogram::BucketBoundaries kWaitBuckets{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                               0.5,   1,      2.5,   5,    10,    30,   60,  300};
const Histogram::BucketBoundaries kHoldBuckets{0.001, 0.01, 0.1, 0.5, 1,    5,    10,
                                               30,    60,   300, 900, 3600, 14400};

std::string label(std::string_view value) { return std::string(value); }

template <std::size_t N, class E>
std::size_t index_of(const std::array<E, N>& values, E value) {
  for (std::size_t i = 0; i < N; ++i)
    if (values[i] == value) return i;
  return N;  // not a known value: the caller ignores the event
}

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

struct PrometheusObserver::Metrics {
  static constexpr std::size_t R = kRecipes.size();
  std::array<std::array<Counter*, kWaitOutcomes.size()>, R> waits{};
  std::array<std::array<Histogram*, kWaitOutcomes.size()>, R> wait_seconds{};
  std::array<std::array<Counter*, 2>, R> grants{};  // [hand_off]
  std::array<std::array<Histogram*, kHoldOutcomes.size()>, R> hold_seconds{};
  std::array<std::array<Counter*, kReasons.size()>, R> losses{};
  std::array<Counter*, R> retries{};
  std::array<Counter*, kStates.size()> states{};
  std::array<std::array<Counter*, kRequests.size()>, R> requests{};

  explicit Metrics(prometheus::Registry& registry) {
    auto& wait_family = prometheus::BuildCounter()
                            .Name("zkr_lock_waits_total")
                            .Help("Acquires ended, by recipe and outcome")
                            .Register(registry);
    auto& wait_time = prometheus::BuildHistogram()
                          .Name("zkr_lock_wait_seconds")
                          .Help("Time from an acquire's call to its outcome")
                          .Register(registry);
    auto& grant_family = prometheus::BuildCounter()
                             .Name("zkr_lock_grants_total")
                             .Help("Grants, by recipe; hand_off=true after waiting for a holder")
                             .Register(registry);
    auto& hold_time = prometheus::BuildHistogram()
                          .Name("zkr_lock_hold_seconds")
                          .Help("Time from a grant to its release or loss")
                          .Register(registry);
    auto& loss_family = prometheus::BuildCounter()
                            .Name("zkr_lock_losses_total")
                            .Help("Grants lost while held, by recipe and reason")
                            .Register(registry);
    auto& retry_family = prometheus::BuildCounter()
                             .Name("zkr_retries_total")
                             .Help("Retries decided by the retry policy, by recipe")
                             .Register(registry);
    auto& state_family = prometheus::BuildCounter()
                             .Name("zkr_connection_states_total")
                             .Help("Connection states the Client announced, by state")
                             .Register(registry);
    auto& request_family = prometheus::BuildCounter()
                               .Name("zkr_requests_total")
                               .Help("Requests the lock engine sent, by recipe and kind")
                               .Register(registry);
    for (std::size_t r = 0; r < R; ++r) {
      const auto recipe = label(to_string(kRecipes[r]));
      for (std::size_t o = 0; o < kWaitOutcomes.size(); ++o) {
        const prometheus::Labels labels{{"recipe", recipe},
                                        {"outcome", label(to_string(kWaitOutcomes[o]))}};
        waits[r][o] = &wait_family.Add(labels);
        wait_seconds[r][o] = &wait_time.Add(labels, kWaitBuckets);
      }
      grants[r][0] = &grant_family.Add({{"recipe", recipe}, {"hand_off", "false"}});
      grants[r][1] = &grant_family.Add({{"recipe", recipe}, {"hand_off", "true"}});
      for (std::size_t o = 0; o < kHoldOutcomes.size(); ++o)
        hold_seconds[r][o] = &hold_time.Add(
            {{"recipe", recipe}, {"outcome", label(to_string(kHoldOutcomes[o]))}}, kHoldBuckets);
      for (std::size_t why = 0; why < kReasons.size(); ++why)
        losses[r][why] =
            &loss_family.Add({{"recipe", recipe}, {"reason", label(to_string(kReasons[why]))}});
      retries[r] = &retry_family.Add({{"recipe", recipe}});
      for (std::size_t q = 0; q < kRequests.size(); ++q)
        requests[r][q] =
            &request_family.Add({{"recipe", recipe}, {"request", label(to_string(kRequests[q]))}});
    }
    for (std::size_t s = 0; s < kStates.size(); ++s)
      states[s] = &state_family.Add({{"state", label(to_string(kStates[s]))}});
  }
};

PrometheusObserver::PrometheusObserver(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)), metrics_(std::make_unique<Metrics>(*registry_)) {}

PrometheusObserver::~PrometheusObserver() = default;

void PrometheusObserver::wait_ended(const WaitEnded& event) {
  const auto r = index_of(kRecipes, event.recipe);
  const auto o = index_of(kWaitOutcomes, event.outcome);
  if (r == kRecipes.size() || o == kWaitOutcomes.size()) return;
  metrics_->waits[r][o]->Increment();
  metrics_->wait_seconds[r][o]->Observe(seconds(event.duration));
}

void PrometheusObserver::granted(const Granted& event) {
  const auto r = index_of(kRecipes, event.recipe);
  if (r == kRecipes.size()) return;
  metrics_->grants[r][event.hand_off ? 1 : 0]->Increment();
}

void PrometheusObserver::hold_ended(const HoldEnded& event) {
  const auto r = index_of(kRecipes, event.recipe);
  const auto o = index_of(kHoldOutcomes, event.outcome);
  if (r == kRecipes.size() || o == kHoldOutcomes.size()) return;
  metrics_->hold_seconds[r][o]->Observe(seconds(event.duration));
}

void PrometheusObserver::lost(const Lost& event) {
  const auto r = index_of(kRecipes, event.recipe);
  const auto why = index_of(kReasons, event.reason);
  if (r == kRecipes.size() || why == kReasons.size()) return;
  metrics_->losses[r][why]->Increment();
}

void PrometheusObserver::retried(const Retried& event) {
  const auto r = index_of(kRecipes, event.recipe);
  if (r == kRecipes.size()) return;
  metrics_->retries[r]->Increment();
}

void PrometheusObserver::connection_state(ConnectionState state) {
  const auto s = index_of(kStates, state);
  if (s == kStates.size()) return;
  metrics_->states[s]->Increment();
}

void PrometheusObserver::request_sent(const RequestSent& event) {
  const auto r = index_of(kRecipes, event.recipe);
  const auto q = index_of(kRequests, event.request);
  if (r == kRecipes.size() || q == kRequests.size()) return;
  metrics_->requests[r][q]->Increment();
}

std::unique_ptr<prometheus::Exposer> expose_metrics(std::shared_ptr<prometheus::Registry> registry,
                                                    const std::string& address) {
  auto exposer = std::make_unique<prometheus::Exposer>(address);
  // The exposer holds the registry weakly: the service's pointer keeps it.
  exposer->RegisterCollectable(registry);
  return exposer;
}

}  // namespace zkr
