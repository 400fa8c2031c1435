// zkr/prometheus.hpp: the zkrecipes-prometheus component. An Observer
// (zkr/observer.hpp) that counts a Client's waits, grants, holds, losses,
// retries, connection states and requests into a prometheus-cpp Registry the
// service owns, and a way to serve that registry over HTTP for Prometheus to
// scrape. docs/metrics.md lists every metric.
//
//   auto registry = std::make_shared<prometheus::Registry>();
//   options.observer = std::make_shared<zkr::PrometheusObserver>(registry);
//   auto exposer = zkr::expose_metrics(registry, "0.0.0.0:9464");  // GET /metrics
//
// Link zkrecipes::prometheus (CMake: find_package(zkrecipes COMPONENTS
// prometheus)); it brings prometheus-cpp's core and pull libraries.
#pragma once

#include <memory>
#include <string>

#include "zkr/observer.hpp"

namespace prometheus {
class Registry;
class Exposer;
}  // namespace prometheus

namespace zkr {

class PrometheusObserver : public Observer {
 public:
  // Registers the zkr_* families in `registry`, every label value at zero.
  // One observer per registry: a second would register the same names.
  explicit PrometheusObserver(std::shared_ptr<prometheus::Registry> registry);
  ~PrometheusObserver() override;
  PrometheusObserver(const PrometheusObserver&) = delete;
  PrometheusObserver& operator=(const PrometheusObserver&) = delete;

  void wait_ended(const WaitEnded& event) override;
  void granted(const Granted& event) override;
  void hold_ended(const HoldEnded& event) override;
  void lost(const Lost& event) override;
  void retried(const Retried& event) override;
  void connection_state(ConnectionState state) override;
  void request_sent(const RequestSent& event) override;

 private:
  struct Metrics;
  const std::shared_ptr<prometheus::Registry> registry_;
  const std::unique_ptr<Metrics> metrics_;
};

// Serves `registry` at http://<address>/metrics until the result is
// destroyed. address: "host:port"; port 0 picks a free one
// (Exposer::GetListeningPorts() says which). Throws what prometheus-cpp
// throws when it cannot listen.
std::unique_ptr<prometheus::Exposer> expose_metrics(std::shared_ptr<prometheus::Registry> registry,
                                                    const std::string& address);

}  // namespace zkr
