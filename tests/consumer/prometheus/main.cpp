// Links zkrecipes-prometheus as installed: the README's three lines, served
// on a loopback port of the system's choosing; needs no ZooKeeper server.
#include <cstdio>
#include <memory>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <zkr/client.hpp>
#include <zkr/prometheus.hpp>

int main() {
  auto registry = std::make_shared<prometheus::Registry>();
  zkr::ClientOptions options;
  options.observer = std::make_shared<zkr::PrometheusObserver>(registry);
  auto exposer = zkr::expose_metrics(registry, "127.0.0.1:0");
  if (exposer->GetListeningPorts().empty()) return 1;
  // The zkr_* families are registered, every series at zero.
  if (registry->Collect().size() != 8) return 1;
  std::puts("prometheus consumer ok");
  return 0;
}
