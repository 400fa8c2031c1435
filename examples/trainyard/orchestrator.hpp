// The train yard's orchestrator (see main.cpp for what a run does).
#pragma once

#include "yard.hpp"

namespace trainyard {

// Runs a whole train yard; returns the process exit code.
int run_orchestrator(const Options& options);

}  // namespace trainyard
