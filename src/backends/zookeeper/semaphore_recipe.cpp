// The lock recipe's part for a semaphore's bid (lock_recipe.hpp): what to do with the verdict of
// the grant rule (semaphore_rule.hpp).
//
// Waiting: a waiter's verdict changes only when a node before it goes, and a grant deletes nothing
// (permits are taken, not handed over), so watching only the node just before ours, as the mutex
// does, would miss a holder further up releasing the permits we need. A waiter watches the line
// itself instead (getChildren with a watch on the lock's folder) and judges again on every change.
// Only waiters watch, one watch each, and each change wakes them all: a herd of the waiters of this
// one semaphore, the price of admitting several waiters with one release (ZooKeeper has no watch
// for "the sum before me fell"). Holders and try_acquire bids set no watch.
#include "backends/zookeeper/lock_recipe.hpp"
#include "backends/zookeeper/semaphore_rule.hpp"

#include <corolock/error.hpp>

namespace corolock::zookeeper::detail {

void lock_recipe::decide_permits(const std::vector<lock_node>& line, std::size_t me) {
  auto v = judge_permits(line, me);
  switch (v.what) {
  case permit_verdict::kind::granted: return grant();
  case permit_verdict::kind::mismatch:
    return fail(error::invalid_argument, "semaphore " + dir_ + ": " + v.words);
  case permit_verdict::kind::wait: break;
  }
  if (!wait_)
    return remove(removal::taken);
  if (state_ == state::watching_line)
    return; // the reply of the listing that armed the watch: armed, wait for it
  watched_ = dir_;
  state_ = state::watching_line;
  send(action::kind::list_watch, dir_);
}

} // namespace corolock::zookeeper::detail
