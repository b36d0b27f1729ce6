// The lock recipe's part for a semaphore's bid (lock_recipe.hpp): what to do with the verdict of
// the grant rule (semaphore_rule.hpp), and whom a waiter waits for.
//
// Waiting without a herd. The rule grants a prefix of the line (a node fits once the permits
// before it plus its own fit, and nodes only leave the line, so a node granted stays granted);
// the first node the rule makes wait is the *first waiter*. A grant takes permits and deletes
// nothing, so the node just before a waiter can stay while the waiter's verdict changes:
// - the first waiter watches the line (getChildren+watch on the lock's folder): a holder before it
//   leaving is the only thing that can admit it; one watch on the folder, not one per waiter;
// - every later waiter watches the node just before it (exists+watch): it can be admitted only
//   after that node is, and that node tells it so — its holder *marks* it (setData) when granted,
//   which fires the watch, or the node leaves, which fires it too;
// - a granted bid with nodes behind it marks its node before anything else (a later waiter may
//   have judged it waiting and watch it: the mark is what wakes that waiter). A waiter whose
//   exists reply finds the node it watches marked already (data version > 0: the mark landed
//   before the watch) looks again at once.
// So a release wakes the first waiter only, and each grant the next waiter only: requests per
// hand-off do not grow with the number of waiters (bench/herd_bench.cpp counts them). A node
// marked while still waiting (an operator's setData) is not watched again: its waiter watches the
// line instead, so a mark can never wake it in a loop. Holders and try_acquire bids set no watch.
#include "backends/zookeeper/lock_recipe.hpp"
#include "backends/zookeeper/semaphore_rule.hpp"

#include <corolock/error.hpp>

namespace corolock::zookeeper::detail {

void lock_recipe::decide_permits(const std::vector<lock_node>& line, std::size_t me) {
  auto v = judge_permits(line, me);
  switch (v.what) {
  case permit_verdict::kind::granted:
    if (me + 1 < line.size())
      emit({.what = action::kind::mark, .path = node_});
    return grant();
  case permit_verdict::kind::mismatch:
    return fail(error::invalid_argument, "semaphore " + dir_ + ": " + v.words);
  case permit_verdict::kind::wait: break;
  }
  if (!wait_)
    return remove(removal::taken);
  // Not the first waiter: the rule makes the node before ours wait too (it granted a prefix).
  if (me > 0 && judge_permits(line, me - 1).what == permit_verdict::kind::wait &&
      line[me - 1].name != marked_seen_) {
    watched_ = dir_ + "/" + line[me - 1].name;
    state_ = state::watching;
    send(action::kind::watch, watched_);
    return;
  }
  if (state_ == state::watching_line)
    return; // the reply of the listing that armed the watch: armed, wait for it
  watched_ = dir_;
  state_ = state::watching_line;
  send(action::kind::list_watch, dir_);
}

} // namespace corolock::zookeeper::detail
