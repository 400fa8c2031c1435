// How the library calls a user's Observer (zkr/observer.hpp): an observer
// is user code on a library thread, so what it throws is logged here and goes
// no further (an engine thread that unwound would strand the attempts on it).
#pragma once

#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

#include "zkr/observer.hpp"

namespace zkr::detail {

template <class Call>
void tell_observer(spdlog::logger& log, Call&& call) noexcept {
  try {
    std::forward<Call>(call)();
  } catch (const std::exception& e) {
    log.warn("observer threw: {}", e.what());
  } catch (...) {
    log.warn("observer threw");
  }
}

}  // namespace zkr::detail
