// The changes between two views of a node's children, as a ChildrenCache
// tells them: a pure function, so that what counts as a change is decided in
// one place and tested without a server.
#pragma once

#include <vector>

#include "zkr/children_cache.hpp"

namespace zkr::detail {

// The events that turn `before` into `after`, in child name order. A child
// is the same node only if its czxid is: a different one is a removal of
// the old node and an addition of the new (a delete and re-create under the
// same name, which the version cannot tell: it starts again at 0). Same
// node, different mzxid: updated. Nothing else is a change (a child's own
// children or ACL changing moves neither).
std::vector<ChildEvent> diff_children(const ChildMap& before, const ChildMap& after);

}  // namespace zkr::detail
