// Private: who holds a lock on ZooKeeper, read back for check_token (core::backend::holder_token).
//
// The holder of a mutex is the first `mutex-` node of its folder by sequence (lock_recipe.hpp: a
// bid is granted when it is first), and its token is that node's czxid: getChildren, then exists on
// the first node for its Stat. A first node deleted between the two (released meanwhile) is read
// again from the list, a few times. No folder, or no mutex node: nobody holds it (token 0).
// Nothing is created, watched or changed.
#pragma once

#include "core/backend.hpp"

#include <cstdint>
#include <string>

namespace corolock::zookeeper {
class client;
}

namespace corolock::zookeeper::detail {

/// The token of the holder of the mutex whose folder is `lock_dir` on `zk` (0: nobody); `h`
/// completes (posted) with it, or the client's error and words naming the path.
void zookeeper_holder_token(client& zk, std::string lock_dir,
                            core::handler<void(error_code, std::uint64_t, std::string)> h);

} // namespace corolock::zookeeper::detail
