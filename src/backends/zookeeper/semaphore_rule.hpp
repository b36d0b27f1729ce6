// Private: the grant rule of a ZooKeeper semaphore, without I/O (the unit tests call it directly).
//
// Each bid is one EPHEMERAL_SEQUENTIAL node `sem-<owner>-<permits>-<capacity>-<sequence>` under the
// lock's container; the line is the semaphore's nodes in sequence order (holders and waiters alike,
// the server's creation order). A bid is granted when the permits of every node before it plus its
// own fit the capacity. So:
// - at most `capacity` permits are ever held: the latest holder L saw, when granted, every node
//   before it; the holders now are among those (nodes only go, none is made before L), so all
//   holders hold at most what L's sum counted, <= capacity;
// - FIFO, nobody starves: a waiter counts every node before it, waiting ones too, so a small
//   request never passes a big one that does not fit (a big one waits only for nodes before it,
//   each of which is granted or leaves in turn);
// - the capacity is the handles': each node carries its handle's, and a bid that finds a node
//   before it made with another capacity is refused (error::invalid_argument), so every holder
//   agrees with the latest holder's capacity, and a misconfigured deployment is told, not served
//   with two counts. ZooKeeper keeps no run-time count (set_permits() is Redis'): the capacity is
//   the one the handles were made with; once every node of the semaphore is gone a new capacity
//   may start.
#pragma once

#include "backends/zookeeper/lock_recipe.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace corolock::zookeeper::detail {

/// Splits a semaphore node's middle, as parse_lock_node left it in `n.owner`
/// ("<owner>-<permits>-<capacity>"), into owner, permits and capacity; false if malformed.
bool split_permit_fields(lock_node& n);

struct permit_verdict {
  enum class kind { granted, wait, mismatch };
  kind what = kind::wait;
  std::string words{}; ///< mismatch: which capacities differ
};

/// The rule above for `line[me]`; `line` in sequence order, of semaphore nodes only.
permit_verdict judge_permits(const std::vector<lock_node>& line, std::size_t me);

} // namespace corolock::zookeeper::detail
