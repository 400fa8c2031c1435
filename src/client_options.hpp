// The checks and defaults of ClientOptions, apart from the Client that uses them.
#pragma once

#include "zkr/client.hpp"

namespace zkr::detail {

// The options with their defaults filled in; throws std::invalid_argument
// naming the first bad one ("ClientOptions::<name>: ...").
ClientOptions validated_options(ClientOptions options);

}  // namespace zkr::detail
