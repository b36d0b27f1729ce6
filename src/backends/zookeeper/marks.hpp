// Private: a lock's marks on ZooKeeper (core::backend::marks; segmented_lock's empty segments).
//
// The marks of lock `name` under a prefix are persistent nodes "<i>" in the folder
// "<root>/<node_name(name)>%marks", beside the lock's own folder, never in it (the lock recipe
// reads every child of the lock's folder as a contender). node_name() writes '%' only to start an
// escape of two upper-case hex digits, so "%marks" ends no lock's node name: a marks folder never
// meets a lock. The folder is a container, made with its missing parents on the first add; the
// marks are persistent, so they outlive every session. Clear removes each mark and then the
// folder (a container the server would reap anyway, a minute later), listing again while an add
// of another client lands between; nothing of the lock is left after it.
#pragma once

#include "core/backend.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace corolock::zookeeper {
class client;
}

namespace corolock::zookeeper::detail {

/// The marks folder of the lock whose own folder is `lock_dir` (lock_backend's ticket).
std::string marks_folder(const std::string& lock_dir);

/// `what` with the marks in `folder` on `zk`; `h` completes (posted) with the set read (ascending) or an empty one, or the client's error
/// and words naming the path.
void zookeeper_marks(client& zk, std::string folder, core::marks_call what, std::uint32_t index,
                     core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h);

} // namespace corolock::zookeeper::detail
