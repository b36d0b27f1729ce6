// The lock recipe's state machine (lock_recipe.hpp).
#include "backends/zookeeper/lock_recipe.hpp"

#include "backends/zookeeper/lock_paths.hpp"
#include "backends/zookeeper/semaphore_rule.hpp"

#include <corolock/error.hpp>
#include <corolock/zookeeper/types.hpp>

#include <algorithm>

namespace corolock::zookeeper::detail {

const char* to_string(node_kind k) {
  switch (k) {
  case node_kind::mutex: return "mutex";
  case node_kind::read: return "read";
  case node_kind::write: return "write";
  case node_kind::permits: return "sem";
  }
  return "?";
}

std::optional<lock_node> parse_lock_node(std::string_view name) {
  constexpr std::size_t digits = 10;
  const auto dash = name.find('-');
  // kind '-' owner '-' 10 digits, the owner not empty
  if (dash == std::string_view::npos || name.size() < dash + 2 + 1 + digits ||
      name[name.size() - digits - 1] != '-')
    return std::nullopt;
  lock_node n;
  const auto kind = name.substr(0, dash);
  if (kind == "mutex")
    n.kind = node_kind::mutex;
  else if (kind == "read")
    n.kind = node_kind::read;
  else if (kind == "write")
    n.kind = node_kind::write;
  else if (kind == "sem")
    n.kind = node_kind::permits;
  else
    return std::nullopt;
  for (auto c : name.substr(name.size() - digits)) {
    if (c < '0' || c > '9')
      return std::nullopt;
    n.sequence = n.sequence * 10 + (c - '0');
  }
  n.owner = std::string(name.substr(dash + 1, name.size() - digits - 1 - dash - 1));
  if (n.kind == node_kind::permits && !split_permit_fields(n))
    return std::nullopt;
  n.name = std::string(name);
  return n;
}

namespace {

bool same_family(node_kind a, node_kind b) {
  const auto rw = [](node_kind k) { return k == node_kind::read || k == node_kind::write; };
  return a == b || (rw(a) && rw(b));
}

std::string_view base_name(std::string_view path) {
  return path.substr(path.rfind('/') + 1);
}

/// The words of a bid ended with its session: none for session_expired, whose own message says it
/// all (the backend adds the code's message to the words: "ended: expired" said it twice).
std::string ended_words(error_code ec) {
  return ec == error::session_expired ? std::string() : "the ZooKeeper session ended";
}

// A container that keeps vanishing between our creates (the server's reaper) is retried this often.
constexpr int max_create_rounds = 5;

} // namespace

lock_recipe::lock_recipe(std::string dir, node_kind kind, std::string owner, bool wait)
    : dir_(std::move(dir)), kind_(kind), owner_(std::move(owner)), wait_(wait) {}

lock_recipe::lock_recipe(std::string dir, std::string owner, bool wait, std::int64_t permits,
                         std::int64_t capacity)
    : lock_recipe(std::move(dir), node_kind::permits, std::move(owner), wait) {
  permits_ = permits;
  capacity_ = capacity;
}

std::string lock_recipe::node_prefix() const {
  auto p = std::string(to_string(kind_)) + "-" + owner_ + "-";
  if (kind_ == node_kind::permits)
    p += std::to_string(permits_) + "-" + std::to_string(capacity_) + "-";
  return p;
}

std::uint64_t lock_recipe::send(action::kind what, std::string path) {
  expect_ = ++next_id_;
  emit({.what = what, .id = expect_, .path = std::move(path)});
  return expect_;
}

bool lock_recipe::session_over(error_code ec) const {
  return ec == error::session_expired || ec == error::closed;
}

void lock_recipe::start() {
  if (state_ == state::idle && !withdrawn_)
    create();
}

void lock_recipe::resume() {
  if (state_ == state::idle && !withdrawn_)
    list(state::finding);
}

void lock_recipe::create() {
  state_ = state::creating;
  const auto id = send(action::kind::create, dir_ + "/" + node_prefix());
  // Pipelined (one round trip less): the server answers a session's requests in order, so this
  // getChildren, sent behind the create, lists our node if the create succeeded. Its reply counts
  // only then (created() makes it current); after a failed or unknown create it is dropped.
  listed_ahead_ = send(action::kind::list, dir_);
  expect_ = id;
}

void lock_recipe::list(state s) {
  state_ = s;
  send(action::kind::list, dir_);
}

void lock_recipe::remove(removal why) {
  removal_ = why;
  state_ = state::removing;
  send(action::kind::remove, node_);
}

void lock_recipe::finish() {
  state_ = state::over;
  expect_ = 0;
  emit({.what = action::kind::done});
}

void lock_recipe::fail(error_code ec, std::string words) {
  if (!withdrawn_)
    pending_fail_ = action{.what = action::kind::failed, .ec = ec, .words = std::move(words)};
  // failed promises nothing of ours is left: a node that may still live goes first.
  if (!node_.empty() && !session_over(ec))
    return remove(removal::withdraw);
  if (pending_fail_)
    emit(std::move(*std::exchange(pending_fail_, std::nullopt)));
  finish();
}

void lock_recipe::created(std::uint64_t id, error_code ec, std::string_view path, std::int64_t czxid) {
  if (id != expect_ || state_ != state::creating)
    return;
  if (!ec) {
    node_ = std::string(path);
    czxid_ = czxid;
    if (withdrawn_)
      return remove(removal::withdraw);
    state_ = state::listing;
    expect_ = listed_ahead_; // already sent behind the create
    return;
  }
  if (ec == error::connection_lost) // it may have landed: look for it by owner
    return list(state::finding);
  if (withdrawn_)
    return finish();
  if (ec == zk_error::no_node) {
    if (++create_rounds_ > max_create_rounds)
      return fail(ec, "the lock's container " + dir_ + " kept vanishing");
    parents_ = containers_of(dir_);
    state_ = state::making_parents;
    send(action::kind::create_parent, parents_.front());
    return;
  }
  fail(ec, session_over(ec) ? ended_words(ec) : "cannot create a node under " + dir_);
}

void lock_recipe::parent_created(std::uint64_t id, error_code ec) {
  if (id != expect_ || state_ != state::making_parents)
    return;
  if (withdrawn_)
    return finish();
  if (!ec || ec == zk_error::node_exists) {
    parents_.erase(parents_.begin());
    if (parents_.empty())
      return create();
  } else if (ec == zk_error::no_node && parents_.size() == containers_of(dir_).size()) {
    // The top folder's parent is the client's root: with a chroot, the chroot's node, which is
    // missing (the server makes no chroot; nothing we create brings it back).
    return fail(ec, "cannot create " + parents_.front() + ": the client's root is missing on the "
                    "server (a chroot that was never created?)");
  } else if (ec == zk_error::no_node) { // one above was reaped meanwhile: from the top again
    if (++create_rounds_ > max_create_rounds)
      return fail(ec, "the lock's container " + dir_ + " kept vanishing");
    parents_ = containers_of(dir_);
  } else if (ec != error::connection_lost) {
    return fail(ec, session_over(ec) ? ended_words(ec)
                                     : "cannot create the container " + parents_.front());
  }
  send(action::kind::create_parent, parents_.front());
}

void lock_recipe::listed(std::uint64_t id, error_code ec, const std::vector<std::string>& names) {
  if (id != expect_ || (state_ != state::listing && state_ != state::finding &&
                        state_ != state::watching_line))
    return;
  if (ec == error::connection_lost)
    return list(state_ == state::watching_line ? state::listing : state_);
  if (ec && ec != zk_error::no_node) { // no_node: the container is gone, so is every node in it
    if (withdrawn_ && session_over(ec))
      return finish();
    return fail(ec, session_over(ec) ? ended_words(ec)
                                     : "cannot list the nodes of " + dir_);
  }
  if (state_ == state::finding) {
    const auto mine = std::find_if(names.begin(), names.end(), [&](const std::string& n) {
      auto p = parse_lock_node(n);
      return p && p->kind == kind_ && p->owner == owner_;
    });
    if (mine == names.end()) // the create did not land
      return withdrawn_ ? finish() : create();
    node_ = dir_ + "/" + *mine;
    czxid_.reset();
    if (withdrawn_)
      return remove(removal::withdraw);
  }
  decide(ec ? std::vector<std::string>{} : names);
}

void lock_recipe::decide(const std::vector<std::string>& names) {
  std::vector<lock_node> line;
  for (const auto& n : names)
    if (auto p = parse_lock_node(n); p && same_family(p->kind, kind_))
      line.push_back(std::move(*p));
  std::sort(line.begin(), line.end(),
            [](const lock_node& a, const lock_node& b) { return a.sequence < b.sequence; });
  const auto me = base_name(node_);
  const auto at = std::find_if(line.begin(), line.end(), [&](const lock_node& n) { return n.name == me; });
  if (at == line.end()) {
    node_.clear(); // gone already: nothing to delete
    return fail(error::lease_lost, "our node under " + dir_ + " was deleted by someone else");
  }
  if (kind_ == node_kind::permits)
    return decide_permits(line, static_cast<std::size_t>(at - line.begin()));
  // The node we wait for: the one just before ours; a reader waits only for writers.
  const lock_node* blocker = nullptr;
  for (auto it = line.begin(); it != at; ++it)
    if (kind_ != node_kind::read || it->kind == node_kind::write)
      blocker = &*it;
  if (!blocker)
    return grant();
  if (!wait_)
    return remove(removal::taken);
  watched_ = dir_ + "/" + blocker->name;
  state_ = state::watching;
  send(action::kind::watch, watched_);
}

void lock_recipe::grant() {
  if (czxid_) {
    state_ = state::held;
    expect_ = 0;
    emit({.what = action::kind::granted, .token = static_cast<std::uint64_t>(*czxid_)});
    return;
  }
  state_ = state::stating; // found by owner after a lost reply: our czxid is still unknown
  send(action::kind::stat, node_);
}

void lock_recipe::looked(std::uint64_t id, error_code ec, bool exists, std::int64_t czxid,
                         std::int32_t version) {
  if (id != expect_ || (state_ != state::watching && state_ != state::stating))
    return;
  if (ec == error::connection_lost)
    return list(state::listing);
  if (ec)
    return fail(ec, session_over(ec) ? ended_words(ec)
                                     : "cannot look at " + (state_ == state::stating ? node_ : watched_));
  if (state_ == state::stating) {
    if (!exists) {
      node_.clear();
      return fail(error::lease_lost, "our node under " + dir_ + " was deleted by someone else");
    }
    czxid_ = czxid;
    state_ = state::held;
    expect_ = 0;
    emit({.what = action::kind::granted, .token = static_cast<std::uint64_t>(czxid)});
    return;
  }
  if (!exists) // gone before the watch was set: look again now
    return list(state::listing);
  if (kind_ == node_kind::permits && version > 0) { // granted (marked) before the watch was set
    marked_seen_ = std::string(base_name(watched_));
    return list(state::listing);
  }
  // else: the watch is armed; watch_fired() goes on
}

void lock_recipe::watch_fired(std::string_view path) {
  // Also before the exists reply (a watch event may overtake the reply that armed it).
  if (path != watched_)
    return;
  if (state_ == state::watching)
    list(state::listing);
  else if (state_ == state::watching_line) // the first waiter stays first: list and watch again
    send(action::kind::list_watch, dir_);
}

void lock_recipe::reconnected() {
  if (state_ == state::watching || state_ == state::watching_line)
    list(state::listing);
}

void lock_recipe::session_ended() {
  if (state_ == state::watching || state_ == state::watching_line)
    fail(error::session_expired, ended_words(error::session_expired));
  else if (state_ == state::held) { // the node went with the session; a later release says lease_lost
    node_.clear();
    finish();
  }
}

void lock_recipe::node_deleted() {
  if (state_ != state::held)
    return;
  node_.clear();
  finish();
}

void lock_recipe::withdraw() {
  if (withdrawn_ || state_ == state::over)
    return;
  withdrawn_ = true;
  switch (state_) {
  case state::idle: return finish();
  case state::making_parents:
  case state::creating:
  case state::finding: return; // the reply decides (created / listed)
  case state::listing:
  case state::stating:
  case state::watching:
  case state::watching_line:
  case state::held: return remove(removal::withdraw);
  case state::removing:
    if (removal_ == removal::taken)
      removal_ = removal::withdraw; // no event any more
    return;
  case state::over: return;
  }
}

void lock_recipe::release() {
  if (state_ != state::held) {
    emit({.what = action::kind::released, .ec = error::lease_lost, .words = "not held"});
    return;
  }
  remove(removal::release);
}

void lock_recipe::removed(std::uint64_t id, error_code ec) {
  if (id != expect_ || state_ != state::removing)
    return;
  if (ec == error::connection_lost) { // may have landed: send it again; no_node then means ours
    remove_uncertain_ = true;
    send(action::kind::remove, node_);
    return;
  }
  const bool gone = !ec || ec == zk_error::no_node || session_over(ec);
  switch (removal_) {
  case removal::withdraw:
    if (pending_fail_)
      emit(std::move(*std::exchange(pending_fail_, std::nullopt)));
    break;
  case removal::taken:
    if (gone)
      emit({.what = action::kind::taken});
    else
      emit({.what = action::kind::failed, .ec = ec, .words = "cannot delete " + node_});
    break;
  case removal::release: {
    error_code out = ec;
    if (ec == zk_error::no_node && remove_uncertain_)
      out = {};
    else if (ec == zk_error::no_node || session_over(ec))
      out = error::lease_lost;
    emit({.what = action::kind::released,
          .ec = out,
          .words = out == error::lease_lost ? "the lock's node " + node_ + " was gone" : std::string()});
    break;
  }
  }
  finish();
}

} // namespace corolock::zookeeper::detail
