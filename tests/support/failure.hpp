// The failed reply of each kind of Keeper request, for the test doubles that
// answer requests themselves (FakeKeeper, FaultKeeper).
#pragma once

#include <string>

#include "zkr/types.hpp"

namespace zkr::test {

template <class V>
V failure(Errc e, const std::string& path) {
  return V(e, path);
}

template <>
inline MultiResult failure<MultiResult>(Errc e, const std::string&) {
  MultiResult r;
  r.error = e;
  return r;
}

}  // namespace zkr::test
