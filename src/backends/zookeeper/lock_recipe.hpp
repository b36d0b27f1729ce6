// Private: ZooKeeper's lock recipe for one contender (one owner's bid), as a state machine without
// I/O: results of ZooKeeper requests in, requests and the bid's outcome out. The backend
// (lock_backend.cpp) sends the requests on the client and feeds the replies back; the unit tests
// (test/unit/zk_lock_recipe.cpp) feed made-up replies and compare the actions as text.
//
// The recipe (ZooKeeper's "Locks" recipe, Curator's InterProcessMutex / ReadWriteLock):
// - Our node is `<dir>/<kind>-<owner>-` EPHEMERAL_SEQUENTIAL (the server appends a 10-digit
//   sequence) under the lock's container `<dir>`. The owner is in the name, so a create whose reply
//   was lost with its connection is found by getChildren and never made twice (no orphan node
//   blocking the line). When the container (or one of its parents) is missing, the parents are made
//   as containers from the top, then the create is sent again: the server deletes an emptied
//   container by itself, so lock folders do not pile up.
// - The getChildren goes out right behind the create, not after its reply: a session's requests
//   are answered in order, so it sees our node if the create landed (one round trip per
//   uncontended acquisition instead of two); after a failed create its reply is dropped.
// - getChildren: the nodes of our family (a mutex: `mutex-`; a read-write lock: `read-` and
//   `write-`; other kinds under the same name are not looked at) ordered by sequence. First in line
//   (a mutex or a writer: first of all; a reader: no writer before it) → granted, token = our
//   node's czxid. Else exists+watch on the one node we wait for (the node just before ours; a
//   reader: the last writer before it): each waiter watches one node, so a release wakes one
//   waiter, not the herd. Its deletion (or exists saying it is already gone) → getChildren again.
// - A semaphore's bid (node `sem-<owner>-<permits>-<capacity>-`): its own grant rule and wait,
//   semaphore_rule.hpp (the rule) and semaphore_recipe.cpp (the wait: the first waiter watches the
//   line, each later one the node before it, which its holder marks once granted); the rest is
//   shared.
// - wait == false and not first → our node is deleted, then `taken`.
// - withdraw(): our node is deleted; a create still in flight is waited for first (its path is not
//   known before its reply), and a create whose outcome is unknown is looked for by owner first.
//   No event follows a withdrawal. A grant not yet handed over is given back the same way.
// - release() (after granted): delete; no such node → lease_lost, unless an earlier delete of ours
//   whose reply was lost had landed (then success).
// - A request whose connection dropped (connection_lost) is re-sent: reads and deletes are
//   idempotent, and a create is replaced by the look-up by owner. The session's end
//   (session_expired, closed) ends the bid: its ephemeral node went with the session. A bid
//   waiting on its watch has no request whose reply could say so: session_ended() ends it.
//
// Replies are matched by the id of the request; only the latest request the recipe waits for is
// current, so a reply overtaken by a watch event (or by a withdrawal) is dropped.
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corolock::zookeeper::detail {

using error_code = boost::system::error_code;

/// The kind of node a bid creates: a mutex's, a read-write lock's reader or writer, a semaphore's
/// bid for permits (semaphore_rule.hpp).
enum class node_kind : std::uint8_t { mutex, read, write, permits };

const char* to_string(node_kind k);

/// One of the lock's nodes as getChildren names it: `<kind>-<owner>-<sequence>`, a semaphore's
/// `sem-<owner>-<permits>-<capacity>-<sequence>`.
struct lock_node {
  node_kind kind = node_kind::mutex;
  std::string owner;
  std::int64_t sequence = 0;
  std::string name;
  std::int64_t permits = 1;  ///< a semaphore's bid: the permits it asks for
  std::int64_t capacity = 0; ///< a semaphore's bid: the capacity its handle was made with
};

/// Parses a child's name; no value for a node that is not a lock node (or of another kind).
std::optional<lock_node> parse_lock_node(std::string_view name);

class lock_recipe {
public:
  struct action {
    enum class kind {
      create_parent, ///< create `path` as a container (node_exists is success)
      create,        ///< create `path` EPHEMERAL_SEQUENTIAL: reply created(id, ec, path, czxid)
      list,          ///< getChildren(`path`): reply listed(id, ec, names)
      watch,         ///< exists(`path`, watch): reply looked(id, ec, exists, czxid)
      list_watch,    ///< getChildren(`path`, watch): reply listed(id, ec, names)
      stat,          ///< exists(`path`, no watch): reply looked(id, ...)
      remove,        ///< delete(`path`): reply removed(id, ec)
      mark,          ///< setData(`path`) on our own node, no reply awaited (a semaphore's grant
                     ///< wakes the waiter watching it; resent while the node is ours)
      granted,       ///< the bid holds the lock with `token`
      taken,         ///< wait == false and another owner is before us
      failed,        ///< final: `ec`, `words`; nothing of the owner is left
      released,      ///< release() done: `ec` (success or lease_lost)
      done,          ///< nothing of ours is left at the store and no reply is awaited
    };
    kind what = kind::list;
    std::uint64_t id = 0;
    std::string path{};
    std::uint64_t token = 0;
    error_code ec{};
    std::string words{};
  };

  /// `dir`: the lock's container ("/corolock/order:42"); `owner` without '-'.
  lock_recipe(std::string dir, node_kind kind, std::string owner, bool wait);
  /// A semaphore's bid for `permits` of `capacity` (semaphore_rule.hpp); 1 <= permits <= capacity.
  lock_recipe(std::string dir, std::string owner, bool wait, std::int64_t permits, std::int64_t capacity);

  void start();
  /// start() for an owner whose earlier bid ended unsure (a node of it may live): looks it up by
  /// owner first, as after a create whose reply was lost; makes one only if none is found.
  void resume();
  void created(std::uint64_t id, error_code ec, std::string_view path, std::int64_t czxid);
  void parent_created(std::uint64_t id, error_code ec);
  void listed(std::uint64_t id, error_code ec, const std::vector<std::string>& names);
  /// `version`: the node's data version (a semaphore's node marked by its granted holder: > 0).
  void looked(std::uint64_t id, error_code ec, bool exists, std::int64_t czxid, std::int32_t version = 0);
  void removed(std::uint64_t id, error_code ec);
  /// A watch of the client fired on `path` (any path: the recipe picks its own).
  void watch_fired(std::string_view path);
  /// The client is back on the session after a reconnect: a waiting bid looks again.
  void reconnected();
  /// The session expired: our node went with it. A bid waiting on its predecessor (its watch
  /// armed, or the exists setting it in flight) fails with session_expired now: an armed watch
  /// never fires, and a late reply is dropped. A bid making, finding or listing its node is ended
  /// by that request's own session_expired. A held one is over (done): the lease keeper tells its
  /// holder, and a release finds nothing (lease_lost), never a node of a later session.
  void session_ended();
  /// Held, our node is gone while the session lives (someone else deleted it: an operator, a
  /// cleanup script): over (done), as after the session's end; a release finds nothing (lease_lost).
  /// The backend learns it by the watch it keeps on a held node. Not held: nothing.
  void node_deleted();

  void withdraw();
  /// After `granted`: delete our node.
  void release();

  std::vector<action> take_actions() { return std::exchange(out_, {}); }

  /// Our node's path, once known ("" before).
  const std::string& node() const noexcept { return node_; }
  const std::string& owner() const noexcept { return owner_; }
  bool finished() const noexcept { return state_ == state::over; }
  bool holding() const noexcept { return state_ == state::held; }

private:
  enum class state {
    idle,
    making_parents, ///< creating the containers above our node, top down
    creating,       ///< our create in flight
    finding,        ///< a create of unknown outcome: listing to find it by owner
    listing,
    stating,        ///< first in line, our czxid unknown (found by owner): exists on our node
    watching,       ///< exists+watch on `watched_` sent or armed
    watching_line,  ///< a semaphore's first waiter: getChildren+watch on `dir_` sent or armed
    held,
    removing,       ///< deleting our node (withdraw, try_acquire, release)
    over,
  };
  enum class removal { withdraw, taken, release };

  std::uint64_t send(action::kind what, std::string path);
  void emit(action a) { out_.push_back(std::move(a)); }
  void create();
  void list(state s);
  void remove(removal why);
  void fail(error_code ec, std::string words);
  void finish();
  bool session_over(error_code ec) const;
  void decide(const std::vector<std::string>& names);
  void grant();
  void decide_permits(const std::vector<lock_node>& line, std::size_t me); // semaphore_recipe.cpp
  std::string node_prefix() const;

  std::string dir_;
  node_kind kind_;
  std::string owner_;
  bool wait_;
  std::int64_t permits_ = 1;
  std::int64_t capacity_ = 1;
  state state_ = state::idle;
  removal removal_ = removal::withdraw;
  bool withdrawn_ = false;
  bool remove_uncertain_ = false; ///< a delete of ours may have landed without our hearing it
  std::uint64_t next_id_ = 0;
  std::uint64_t expect_ = 0;      ///< the one reply that is current
  std::uint64_t listed_ahead_ = 0; ///< the getChildren sent behind our create
  std::string node_;
  std::optional<std::int64_t> czxid_;
  std::string watched_;
  std::string marked_seen_; ///< a semaphore's: a predecessor found marked while we watched it
  std::vector<std::string> parents_; ///< making_parents: the containers still to create
  int create_rounds_ = 0;
  std::optional<action> pending_fail_; ///< failed, emitted once our node is deleted
  std::vector<action> out_;
};

} // namespace corolock::zookeeper::detail
