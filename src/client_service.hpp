// A service that a layer above the Client keeps once per Client (the
// recipes' directory registry), without the Client knowing its type: the
// core client names no recipe, and the build keeps src/ from including one.
#pragma once

namespace zkr::detail {

// Made on first use (ClientInternals::service), kept by the Client, and
// closed when ~Client begins, while the session still serves: close() may
// still use the Client, and after it the service must never call into the
// Client again. Holders may keep it past the Client.
class ClientService {
 public:
  virtual ~ClientService() = default;
  virtual void close() noexcept = 0;
};

}  // namespace zkr::detail
