// zkr/connection_state.hpp: the states of a Client's link to the ensemble, as
// listeners and recipes see them (Curator's ConnectionState, in our terms).
// Client::add_listener (zkr/client.hpp) delivers them.
#pragma once

#include <string_view>

namespace zkr {

// What recipes need to know about the link to the ensemble.
enum class ConnectionState {
  connected,    // first connection of this Client
  suspended,    // link lost; the session may still live: trust nothing new
  reconnected,  // link back: the same session, or a new one after lost (see epoch)
  lost,         // the session expired (or suspended outlasted the session timeout):
                // every ephemeral node of it is gone or going
  read_only,    // connected to a server that has lost its quorum: reads only
};
std::string_view to_string(ConnectionState s) noexcept;

}  // namespace zkr
