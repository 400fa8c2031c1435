// What most test files include, parsed once per build instead of once per
// file (see tests/CMakeLists.txt): GoogleTest, the standard library's threads,
// futures and containers, and the Client and lock headers. About 2-3 s of
// each test file's compile, and there are over a hundred. Nothing here may
// depend on a macro a test defines: the header is compiled before any test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"
