// Private: the folders above a node, made before a create the server refused for want of them —
// for the small runs that write a node where its folder may be missing or reaped (a lock's note,
// notes.cpp; its marks, marks.cpp). The lock recipe makes its own, as actions (it has no I/O).
//
// Each folder is a container (the server reaps it once empty), made top first; one that exists
// already is fine. One above vanishing between two creates (an empty container reaped) starts the
// run again from the top, at most max_rounds times, then it fails with the server's code.
#pragma once

#include "core/backend.hpp"

#include <string>

namespace corolock::zookeeper {
class client;
}

namespace corolock::zookeeper::detail {

/// Makes the folders above `node` (containers_of its parent, top first) on `zk`; `h` completes
/// with success, or with the server's code and words naming the folder it could not make. A node
/// at the top of the tree has no folder to make: `h` completes at once, inline.
void make_folders_above(client& zk, const std::string& node, core::handler<void(error_code, std::string)> h);

} // namespace corolock::zookeeper::detail
