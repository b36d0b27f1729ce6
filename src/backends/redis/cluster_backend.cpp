// A Redis Cluster behind the lock core's seam (cluster_backend.hpp): the routing of bids, releases,
// renewals and permit calls to the node backends of the slots' masters.
#include "backends/redis/cluster_backend.hpp"

#include "backends/redis/backend_state.hpp"
#include "backends/redis/lock_backend.hpp"
#include "backends/redis/script_requests.hpp"
#include "core/asio_timer.hpp"
#include "detail/completion.hpp"
#include "backends/redis/client/cluster/cluster_nodes.hpp"
#include "backends/redis/client/cluster/key_slot.hpp"
#include "backends/redis/client/cluster/redirection.hpp"
#include "backends/redis/client/cluster/retry_window.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/assert.hpp>

#include <map>
#include <unordered_map>

namespace corolock::redis::detail {

using corolock::detail::complete_later;
using std::chrono::milliseconds;

namespace {

constexpr int max_hops = 8; // redirections of one operation (a slot moves once, rarely twice)

/// The lease ticket of a cluster lease (grant::ticket): the master that granted it. One per node,
/// shared by every lease it granted (a grant costs no allocation); it outlives the node's client
/// (a lease may), which it holds weakly.
struct granted_by final : core::lease_ticket {
  granted_by(const std::shared_ptr<lock_link>& c, std::uint64_t t) : node(c), tag(t) {}
  /// The node's client while it is open, else null.
  std::shared_ptr<lock_link> open_node() const {
    auto c = node.lock();
    return c && !c->closed() ? c : nullptr;
  }
  std::weak_ptr<lock_link> node;
  const std::uint64_t tag; ///< the node's number in cluster_state::by_tag
};

/// A node client's lock backend, hung on it as its extension: the node's reconnects and close
/// reach it as they reach a standalone client's.
class node_locks final : public corolock::redis::detail::client_extension {
public:
  node_locks(const std::shared_ptr<lock_link>& c, std::string owner_id, std::uint64_t t)
      : backend(c, std::move(owner_id)), tag(t), ticket(std::make_shared<granted_by>(c, t)) {}
  void on_reconnect() override { backend.on_reconnect(); }
  void on_close(corolock::redis::request& last) override { backend.close_into(last); }

  lock_backend backend;
  const std::uint64_t tag;
  const std::shared_ptr<granted_by> ticket; ///< grant::ticket of the leases it granted
};

} // namespace

struct cluster_state : std::enable_shared_from_this<cluster_state> {
  explicit cluster_state(const std::shared_ptr<client_impl>& c) : top(c), ex(c->ex), id(c->id) {}

  std::shared_ptr<client_impl> top_client() const { return top.lock(); }
  /// The cluster's nodes: null before the client connected, or after its connect failed.
  std::shared_ptr<cluster_nodes> nodes() const {
    auto t = top.lock();
    return t ? t->cluster : nullptr;
  }
  bool stopped() const {
    auto t = top.lock();
    return closed || !t || t->closed();
  }
  milliseconds patience() const {
    auto t = top.lock();
    return t ? t->cfg.request_timeout : milliseconds(5000);
  }

  /// The lock backend of node `c`, made on first use.
  node_locks& on(const std::shared_ptr<lock_link>& c) {
    if (!c->extension()) {
      auto n = std::make_unique<node_locks>(c, id, ++tags);
      core::backend::hooks h;
      h.reconnected = [w = weak_from_this()] {
        if (auto s = w.lock(); s && s->hooks.reconnected)
          s->hooks.reconnected(); // a restarted master may have lost its leases: check them all
      };
      h.reachable = [w = weak_from_this()] {
        if (auto s = w.lock(); s && s->hooks.reachable)
          s->hooks.reachable();
      };
      h.resend = [w = weak_from_this()](core::backend::send_once once) {
        if (auto s = w.lock()) // a node's give-up: the core's queue sends it again
          core::resend(s->hooks, std::move(once));
        else
          once([](error_code, std::string) {});
      };
      n->backend.set_hooks(std::move(h));
      std::erase_if(by_tag, [](const auto& kv) { return kv.second.expired(); });
      by_tag[n->tag] = c;
      c->set_extension(std::move(n));
    }
    auto* n = dynamic_cast<node_locks*>(c->extension());
    BOOST_ASSERT_MSG(n, "a cluster node's locks run on one lock layer");
    return *n;
  }

  /// Every node backend made so far.
  template <typename F>
  void each_node(F f) const {
    for (const auto& [_, w] : by_tag)
      if (auto c = w.lock())
        if (auto* n = dynamic_cast<node_locks*>(c->extension()))
          f(*n);
  }

  std::weak_ptr<client_impl> top;
  asio::any_io_executor ex;
  std::string id; ///< the cluster client's: every owner starts with it, on every node
  std::uint64_t owners = 0;
  std::uint64_t tags = 0;
  core::backend::hooks hooks;
  bool closed = false;
  std::unordered_map<std::uint64_t, std::weak_ptr<lock_link>> by_tag;
};

namespace {

/// Calls `then(ec, node)` with the client of the master serving `slot`: inline when it is
/// connected, else once the map was looked at (which may connect a master met for the first time).
template <typename F>
void find_node(const std::shared_ptr<cluster_state>& s, std::uint16_t slot, F then) {
  auto nodes = s->nodes();
  if (!nodes || s->stopped()) {
    then(error_code(s->stopped() ? error::closed : error::not_connected), nullptr);
    return;
  }
  if (auto n = nodes->connected_node_for(slot)) {
    then(error_code{}, std::move(n));
    return;
  }
  asio::co_spawn(s->ex, nodes->node_for(slot),
                 [nodes, then = std::move(then)](
                     std::exception_ptr e,
                     std::pair<error_code, std::shared_ptr<client_impl>> r) mutable {
                   if (e)
                     r = {error::not_connected, nullptr};
                   then(r.first, std::move(r.second));
                 });
}

/// The lock's slot, hashed once when its handle was made (redis_lock).
std::uint16_t slot_of(const core::lock_spec& lock) {
  return core::ticket_of<redis_lock>(lock).slot;
}

/// The master that granted a cluster lease (its lease ticket: granted_by), while its client is
/// open; renewals and the release go to whichever master serves the lock's slot when they are
/// sent, this one when the map names none that is connected.
std::shared_ptr<lock_link> granted_node(const core::held& lease) {
  const auto* by = core::ticket_of<granted_by>(lease);
  return by ? by->open_node() : nullptr;
}

enum class reroute {
  no,
  refresh_map,      // MOVED: the map names another owner
  after_pause,      // ASK, TRYAGAIN: the slot is migrating; the same map, a little later
  refresh_later,    // CLUSTERDOWN, or the master cannot be reached: a little later, a fresh map
  if_owner_changed, // the master stopped answering: go on only if a failover moved the slot
};

/// One bid, routed: a node backend's contender on the slot's master, placed again (same owner)
/// elsewhere or later when it fails in a way the cluster explains.
class cluster_bid final : public core::contender_events,
                          public std::enable_shared_from_this<cluster_bid> {
public:
  cluster_bid(std::shared_ptr<cluster_state> s, core::bid b, std::string owner,
              core::contender_events& e)
      : s_(std::move(s)), b_(std::move(b)), owner_(std::move(owner)), events_(&e),
        slot_(slot_of(*b_.lock)),
        window_(std::nullopt, s_->patience()),
        pause_(s_->ex) {}

  void start() { route(); }

  /// Placed on `node` by its backend's release_then_bid, riding on the release of `lease`, whose
  /// outcome goes to `released` (core::backend::release_then_bid).
  void ride(std::shared_ptr<lock_link> node, const core::held& lease,
            core::handler<void(error_code, std::string)> released) {
    node_ = std::move(node);
    auto& n = s_->on(node_);
    ticket_ = n.ticket;
    on_node_ = n.backend.release_then_bid(lease, std::move(released), b_, owner_, *this);
  }

  void withdraw() {
    over_ = true;
    events_ = nullptr;
    pause_.cancel();
    if (on_node_)
      on_node_->withdraw(); // its give-up goes to the node it is on
  }

  /// The core is done with it (after its event or its withdrawal).
  void detach() {
    over_ = true;
    events_ = nullptr;
    pause_.cancel();
  }

  // The node contender's events (posted by it).
  void granted(core::grant g) override {
    auto self = shared_from_this();
    retire_node();
    over_ = true;
    g.ticket = ticket_; // the master that granted it (the slot is the lock's: its ticket's)
    if (auto* e = std::exchange(events_, nullptr))
      e->granted(g);
  }
  void taken() override {
    auto self = shared_from_this();
    retire_node();
    over_ = true;
    if (auto* e = std::exchange(events_, nullptr))
      e->taken();
  }
  void unsure(error_code ec, std::string words) override {
    auto self = shared_from_this();
    retire_node();
    if (over_)
      return;
    next(ec, std::move(words), reroute::if_owner_changed); // a failover may have promoted another
  }
  void failed(error_code ec, std::string words) override {
    auto self = shared_from_this();
    retire_node();
    if (over_)
      return;
    reroute why = reroute::no;
    if (ec == error::redis_error) {
      switch (corolock::redis::detail::classify_cluster_error(words)) {
      case cluster_error_kind::moved: why = reroute::refresh_map; break;
      case cluster_error_kind::down: why = reroute::refresh_later; break;
      case cluster_error_kind::ask:
      case cluster_error_kind::try_again: why = reroute::after_pause; break;
      case cluster_error_kind::none: break;
      }
    } else if (ec == error::not_connected || ec == error::connection_lost ||
               ec == error::timeout) {
      why = reroute::if_owner_changed; // a failover may have promoted another master
    }
    next(ec, std::move(words), why);
  }

private:
  void route() {
    if (over_)
      return;
    find_node(s_, slot_, [self = shared_from_this()](error_code ec,
                                                     std::shared_ptr<lock_link> node) {
      self->found(ec, std::move(node));
    });
  }

  void found(error_code ec, std::shared_ptr<lock_link> node) {
    if (over_)
      return;
    if (!ec && node->closed())
      ec = error::closed;
    if (ec) {
      auto nodes = s_->nodes();
      std::string words = nodes ? nodes->last_error() : std::string();
      node_ = nullptr;
      // Which master cannot be reached, and why, is also the client's connect error.
      if (auto t = s_->top_client(); t && ec == error::not_connected && !words.empty())
        t->last_connect_error = words;
      // A client that never connected has no map to follow. A try does not wait for a master
      // known down: one look at the map for a failover, then not_connected.
      const reroute why = ec == error::closed || !nodes             ? reroute::no
                          : !b_.wait && ec == error::not_connected ? reroute::if_owner_changed
                                                                   : reroute::refresh_later;
      next(ec, words.empty() ? ec.message() : std::move(words), why);
      return;
    }
    node_ = std::move(node);
    auto& n = s_->on(node_);
    ticket_ = n.ticket;
    on_node_ = n.backend.contend(b_, owner_, *this);
  }

  void next(error_code ec, std::string words, reroute why) {
    if (why == reroute::no || s_->stopped())
      return fail(ec, std::move(words), true); // the store's answer, no map, or closing
    auto nodes = s_->nodes();
    const bool hop = why == reroute::refresh_map || why == reroute::if_owner_changed;
    if (hop && (++hops_ >= max_hops || steady::now() >= window_.end()))
      return fail(ec, std::move(words));
    if (!hop || why == reroute::refresh_later) {
      const auto pause = window_.next(steady::now());
      if (!pause)
        return fail(ec, std::move(words));
      pause_.expires_after(*pause);
      pause_.async_wait([self = shared_from_this(), why](error_code) {
        if (self->over_)
          return;
        if (why == reroute::refresh_later)
          self->refresh_then([self] { self->route(); });
        else
          self->route();
      });
      return;
    }
    if (!nodes)
      return fail(ec, std::move(words), true);
    const shard* before = nodes->map().owner(slot_);
    const node_address was = before ? before->master : node_address{};
    auto go_on = [self = shared_from_this(), why, was, ec, words]() mutable {
      if (self->over_)
        return;
      auto n = self->s_->nodes();
      const shard* after = n ? n->map().owner(self->slot_) : nullptr;
      if (why == reroute::if_owner_changed && (!after || after->master == was))
        return self->fail(ec, std::move(words)); // the same master: its error stands
      self->route();
    };
    // A MOVED names the new owner: no need to wait for a full refresh (which may be rate-limited).
    if (node_ && nodes->note_moved(words, node_->config().host))
      go_on();
    else
      refresh_then(std::move(go_on));
  }

  template <typename F>
  void refresh_then(F f) {
    auto nodes = s_->nodes();
    if (!nodes)
      return f();
    asio::co_spawn(s_->ex, nodes->refresh(),
                   [nodes, f = std::move(f)](std::exception_ptr, error_code) mutable { f(); });
  }

  /// `final`: whatever the transport said, bidding again cannot help (no map, closed).
  void fail(error_code ec, std::string words, bool final = false) {
    over_ = true;
    if (ec == error::redis_error)
      if (auto t = s_->top_client())
        t->last_server_error = words;
    // Posted: a failure found inline (a client closed before the bid) must not reach the core
    // from its own call; a withdrawal meanwhile silences it. No master answered in the window:
    // unsure (contract 6), the core bids again or gives the owner back.
    const bool unanswered = !final && corolock::redis::detail::unreachable(ec);
    asio::post(s_->ex, [self = shared_from_this(), ec, unanswered, words = std::move(words)]() mutable {
      if (auto* e = std::exchange(self->events_, nullptr)) {
        if (unanswered)
          e->unsure(ec, std::move(words));
        else
          e->failed(ec, std::move(words));
      }
    });
  }

  /// The node contender is done after its event; destroyed on a later turn (its event is still on
  /// the stack).
  void retire_node() {
    if (on_node_)
      asio::post(s_->ex, [self = shared_from_this(), c = std::move(on_node_)]() mutable {
        c.reset();
      });
  }

  std::shared_ptr<cluster_state> s_;
  core::bid b_;
  std::string owner_;
  core::contender_events* events_;
  const std::uint16_t slot_;
  corolock::redis::detail::retry_window window_;
  asio::steady_timer pause_;
  std::shared_ptr<lock_link> node_;
  std::unique_ptr<core::contender> on_node_;
  std::shared_ptr<granted_by> ticket_; // of the node the bid is on
  int hops_ = 0;
  bool over_ = false;
};

class cluster_contender final : public core::contender {
public:
  explicit cluster_contender(std::shared_ptr<cluster_bid> b) : bid_(std::move(b)) {}
  ~cluster_contender() override { bid_->detach(); }
  void withdraw() override { bid_->withdraw(); }

private:
  std::shared_ptr<cluster_bid> bid_;
};

/// A release or a permit call, run on a node backend: first on `first` (the node that granted the
/// lease) if it is still there, else on the slot's master; a MOVED met there follows the slot to its
/// new owner, where the migrated keys are.
template <typename... Result>
struct routed_op : std::enable_shared_from_this<routed_op<Result...>> {
  using done_handler = core::handler<void(error_code, Result..., std::string)>;
  using node_call = std::function<void(lock_backend&, done_handler)>;

  std::shared_ptr<cluster_state> s;
  std::uint16_t slot = 0;
  node_call call;
  // Never move-assigned (see detail/completion.hpp).
  corolock::detail::stored_handler<done_handler> h;
  std::shared_ptr<lock_link> node;
  int hops = 0;

  void start(std::shared_ptr<lock_link> first) {
    if (first)
      return send(std::move(first));
    route();
  }

  void route() {
    find_node(s, slot, [self = this->shared_from_this()](error_code ec,
                                                         std::shared_ptr<lock_link> n) {
      if (ec) {
        auto nodes = self->s->nodes();
        return self->finish(ec, Result{}..., nodes ? nodes->last_error() : std::string());
      }
      self->send(std::move(n));
    });
  }

  void send(std::shared_ptr<lock_link> n) {
    node = std::move(n);
    call(s->on(node).backend,
         [self = this->shared_from_this()](error_code ec, Result... r, std::string words) {
           self->done(ec, std::move(r)..., std::move(words));
         });
  }

  void done(error_code ec, Result... r, std::string words) {
    if (ec == error::redis_error &&
        corolock::redis::detail::classify_cluster_error(words) == cluster_error_kind::moved &&
        ++hops < max_hops && !s->stopped())
      if (auto nodes = s->nodes()) {
        nodes->note_moved(words, node->config().host);
        return route();
      }
    finish(ec, std::move(r)..., std::move(words));
  }

  void finish(error_code ec, Result... r, std::string words) {
    if (ec == error::redis_error)
      if (auto t = s->top_client())
        t->last_server_error = words;
    complete_later(s->ex, h.take(), asio::cancellation_slot{}, ec, std::move(r)...,
                   std::move(words));
  }
};

} // namespace

cluster_backend::cluster_backend(const std::shared_ptr<client_impl>& top)
    : s_(std::make_shared<cluster_state>(top)) {}

cluster_backend::~cluster_backend() { s_->closed = true; }

void cluster_backend::shut() { s_->closed = true; }

const core::backend_traits& cluster_backend::traits() const noexcept {
  return redis_lock_traits();
}

asio::any_io_executor cluster_backend::get_executor() const { return s_->ex; }

core::steady::time_point cluster_backend::now() const { return steady::now(); }

std::unique_ptr<core::timer> cluster_backend::make_timer() {
  return std::make_unique<core::asio_timer>(s_->ex);
}

std::string cluster_backend::new_owner() { return s_->id + ':' + std::to_string(++s_->owners); }

std::string cluster_backend::new_owner(const core::lock_spec& lock) {
  return redis_owner_of(new_owner(), s_->top_client().get(), lock);
}

bool cluster_backend::known_unreachable() const noexcept {
  auto t = s_->top_client();
  return !t || t->closed() || s_->closed || !t->ready_for_locks() || !t->cluster;
}

error_code cluster_backend::check(const core::lock_spec& lock, std::string& words) const {
  return check_redis_lock(lock, words);
}

std::string cluster_backend::line_tag(const core::lock_spec& lock) const {
  return redis_line_tag(lock);
}

std::shared_ptr<const core::lock_ticket> cluster_backend::prepare(
    const core::lock_spec& lock) const {
  return std::make_shared<const redis_lock>(lock);
}

std::unique_ptr<core::contender> cluster_backend::contend(core::bid b, std::string owner,
                                                          core::contender_events& events) {
  auto bid = std::make_shared<cluster_bid>(s_, std::move(b), std::move(owner), events);
  bid->start();
  return std::make_unique<cluster_contender>(std::move(bid));
}

namespace {
/// The release of `lease` as a routed call: a MOVED met follows the slot.
std::shared_ptr<routed_op<>> release_op(const std::shared_ptr<cluster_state>& s,
                                        const core::held& lease,
                                        core::handler<void(error_code, std::string)> h) {
  auto op = std::make_shared<routed_op<>>();
  op->s = s;
  op->slot = slot_of(*lease.lock);
  op->call = [lease](lock_backend& b, core::handler<void(error_code, std::string)> done) {
    b.release(lease, std::move(done));
  };
  op->h.set(std::move(h));
  return op;
}
} // namespace

void cluster_backend::release(const core::held& lease,
                              core::handler<void(error_code, std::string)> h) {
  auto op = release_op(s_, lease, std::move(h));
  // The slot's master now; the one that granted it if the map names none that is connected. A
  // lock whose slot moved is no longer kept by the node that granted it.
  const auto by = granted_node(lease);
  auto nodes = s_->nodes();
  std::shared_ptr<lock_link> first = nodes ? nodes->connected_node_for(op->slot) : nullptr;
  if (!first)
    first = by;
  if (first && by && first != by)
    s_->on(by).backend.forget_held(lease.owner);
  op->start(std::move(first));
}

bool cluster_backend::rides_release(const core::lock_spec& lock) const {
  return lock_backend::can_ride(lock);
}

std::unique_ptr<core::contender>
cluster_backend::release_then_bid(const core::held& lease,
                                  core::handler<void(error_code, std::string)> h, core::bid b,
                                  std::string owner, core::contender_events& events) {
  auto nodes = s_->nodes();
  auto first = nodes && !s_->stopped() ? nodes->connected_node_for(slot_of(*lease.lock)) : nullptr;
  if (!first || first != granted_node(lease)) {
    release(lease, std::move(h));
    return contend(std::move(b), std::move(owner), events);
  }
  auto op = release_op(s_, lease, std::move(h));
  op->node = first; // where a MOVED of the release is noted from
  auto bid = std::make_shared<cluster_bid>(s_, std::move(b), std::move(owner), events);
  bid->ride(std::move(first), lease, [op](error_code ec, std::string words) {
    op->done(ec, std::move(words));
  });
  return std::make_unique<cluster_contender>(std::move(bid));
}

void cluster_backend::give_back(const core::bid& b, const std::string& owner,
                                core::handler<void(error_code, std::string)> h) {
  auto op = std::make_shared<routed_op<>>();
  op->s = s_;
  op->slot = slot_of(*b.lock);
  op->call = [b, owner](lock_backend& node, core::handler<void(error_code, std::string)> done) {
    node.give_back(b, owner, std::move(done));
  };
  op->h.set(std::move(h));
  auto nodes = s_->nodes();
  op->start(nodes ? nodes->connected_node_for(op->slot) : nullptr);
}

void cluster_backend::permits(const core::lock_spec& lock, std::optional<std::int64_t> count,
                              core::handler<void(error_code, semaphore_status, std::string)> h) {
  auto op = std::make_shared<routed_op<semaphore_status>>();
  op->s = s_;
  op->slot = slot_of(lock);
  op->call = [lock, count](lock_backend& b,
                            core::handler<void(error_code, semaphore_status, std::string)> done) {
    b.permits(lock, count, std::move(done));
  };
  op->h.set(std::move(h));
  op->start(nullptr);
}

void cluster_backend::marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
                            core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) {
  // The set shares the lock's hash tag: on the master serving the lock's slot, routed as permits.
  auto op = std::make_shared<routed_op<std::vector<std::uint32_t>>>();
  op->s = s_;
  op->slot = slot_of(lock);
  op->call = [lock, what, index](lock_backend& b,
                                 core::handler<void(error_code, std::vector<std::uint32_t>,
                                                    std::string)> done) {
    b.marks(lock, what, index, std::move(done));
  };
  op->h.set(std::move(h));
  op->start(nullptr);
}

void cluster_backend::take_tokens(const core::lock_spec& lock, core::bucket_take what,
                                  core::handler<void(error_code, core::bucket_answer, std::string)> h) {
  // The bucket shares the lock's hash tag: on the master serving the lock's slot, routed as marks.
  // Only a MOVED is followed: the node refused the key, so nothing was taken there.
  auto op = std::make_shared<routed_op<core::bucket_answer>>();
  op->s = s_;
  op->slot = slot_of(lock);
  op->call = [lock, what](lock_backend& b,
                          core::handler<void(error_code, core::bucket_answer, std::string)> done) {
    b.take_tokens(lock, what, std::move(done));
  };
  op->h.set(std::move(h));
  op->start(nullptr);
}

void cluster_backend::holder_token(const core::lock_spec& lock,
                                   core::handler<void(error_code, std::uint64_t, std::string)> h) {
  // The lock's key, on the master serving its slot: routed as marks and permits.
  auto op = std::make_shared<routed_op<std::uint64_t>>();
  op->s = s_;
  op->slot = slot_of(lock);
  op->call = [lock](lock_backend& b,
                    core::handler<void(error_code, std::uint64_t, std::string)> done) {
    b.holder_token(lock, std::move(done));
  };
  op->h.set(std::move(h));
  op->start(nullptr);
}

void cluster_backend::note(const core::lock_spec& lock, std::optional<core::lock_note> write,
                           core::handler<void(error_code, core::lock_note, std::string)> h) {
  // The note shares the lock's hash tag: on the master serving the lock's slot, routed as marks.
  // A MOVED (the script did not run there) follows the slot; a write that ran is harmless to send
  // again, and the node's backend does so after a dropped connection.
  auto op = std::make_shared<routed_op<core::lock_note>>();
  op->s = s_;
  op->slot = slot_of(lock);
  op->call = [lock, write = std::move(write)](
                 lock_backend& b, core::handler<void(error_code, core::lock_note, std::string)> done) {
    b.note(lock, write, std::move(done));
  };
  op->h.set(std::move(h));
  op->start(nullptr);
}

void cluster_backend::renew(std::vector<core::renewal> leases,
                            core::handler<void(std::vector<core::renew_outcome>)> h) {
  // Each lease on the master serving its slot now (the one that granted it until the map
  // changes), one batch per node. A live migration moves a lock's keys with their owner, token and
  // expiry, so the new master renews them (renew.lua checks owner and token) and the lease goes
  // on: that node keeps it from then on. A master that refuses (MOVED or ASK: its slot moved or is
  // moving) leaves it "unknown", and the map is read again for the next renewal, a third of a
  // lease later; a lease never renewed meanwhile is told by its local deadline. One whose slot has
  // no connected master is renewed where it was granted, if that node is still there.
  struct gather {
    std::vector<core::renew_outcome> out;
    std::size_t left = 1; // this call's own share, given up once every batch is sent
    bool unknown = false;
    // Never move-assigned (see detail/completion.hpp).
    corolock::detail::stored_handler<core::handler<void(std::vector<core::renew_outcome>)>> h;
  };
  auto g = std::make_shared<gather>();
  g->out.resize(leases.size());
  g->h.set(std::move(h));
  auto nodes = s_->nodes();
  std::map<std::shared_ptr<lock_link>, std::vector<std::size_t>> by_node;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    const auto& lease = leases[i].lease;
    std::shared_ptr<lock_link> node = nodes ? nodes->connected_node_for(slot_of(*lease.lock)) : nullptr;
    if (!node)
      node = granted_node(lease);
    if (node && !s_->stopped())
      by_node[std::move(node)].push_back(i);
  }
  auto one_done = [g, s = s_] {
    if (--g->left > 0)
      return;
    if (g->unknown)
      if (auto n = s->nodes())
        asio::co_spawn(s->ex, n->refresh(), [n](std::exception_ptr, error_code) {});
    g->h.take()(std::move(g->out));
  };
  for (auto& [node, at] : by_node) {
    auto& on = s_->on(node);
    std::vector<core::renewal> batch;
    batch.reserve(at.size());
    // Leases granted by another node: moved here by a migration if this node renews them.
    std::vector<std::pair<std::size_t, core::held>> moved;
    for (auto i : at) {
      if (leases[i].lease.ticket != on.ticket)
        moved.emplace_back(batch.size(), leases[i].lease);
      batch.push_back(std::move(leases[i]));
    }
    ++g->left;
    on.backend.renew(std::move(batch), [g, s = s_, node, at = std::move(at),
                                        moved = std::move(moved),
                                        one_done](std::vector<core::renew_outcome> got) {
      using result = core::renew_outcome::result;
      for (std::size_t k = 0; k < at.size() && k < got.size(); ++k) {
        g->out[at[k]] = got[k];
        g->unknown = g->unknown || got[k].what == result::unknown;
      }
      for (auto& [k, lease] : moved) {
        if (k >= got.size() || got[k].what != result::renewed)
          continue;
        if (auto from = granted_node(lease))
          s->on(from).backend.forget_held(lease.owner);
        s->on(node).backend.adopt_held(lease.owner, lease.lock);
      }
      one_done();
    });
  }
  asio::post(s_->ex, one_done); // never inline (contract 1)
}

void cluster_backend::close(core::handler<void()> h) {
  auto done = std::make_shared<std::pair<std::size_t, core::handler<void()>>>(1, std::move(h));
  auto one_done = [done] {
    if (--done->first == 0)
      std::move(done->second)();
  };
  if (!std::exchange(s_->closed, true))
    s_->each_node([&](node_locks& n) {
      ++done->first;
      n.backend.close(one_done);
    });
  asio::post(s_->ex, one_done);
}

void cluster_backend::give_up() {
  s_->each_node([](node_locks& n) { n.backend.give_up(); });
}

void cluster_backend::set_hooks(hooks h) { s_->hooks = std::move(h); }

namespace {
/// A watch set up with no master of the slot connected: ready at once, never told.
class unwatched final : public core::release_watch {};

/// The slot of a lock named by a spec another backend prepared (a quorum's: release notices name
/// a lock by its name and prefix alone), hashed from its key.
std::uint16_t named_slot(const core::lock_spec& lock) {
  return key_slot(lock_key(lock.options.prefix, lock.name));
}
} // namespace

std::unique_ptr<core::release_watch> cluster_backend::watch_releases(
    const core::lock_spec& lock, core::release_notices::watch_events events) {
  auto nodes = s_->nodes();
  auto node = nodes && !s_->stopped() ? nodes->connected_node_for(named_slot(lock)) : nullptr;
  if (node)
    return s_->on(node).backend.watch_releases(lock, std::move(events));
  if (events.ready)
    asio::post(s_->ex, std::move(events.ready));
  return std::make_unique<unwatched>();
}

void cluster_backend::announce_release(const core::lock_spec& lock) {
  auto nodes = s_->nodes();
  if (auto node = nodes && !s_->stopped() ? nodes->connected_node_for(named_slot(lock)) : nullptr)
    s_->on(node).backend.announce_release(lock);
}

namespace {
/// A note watch with no master of the slot connected (not_connected), or of a closed cluster
/// client (closed): ends on a later turn, unless destroyed first (the posted end holds the
/// watch's token weakly).
class unplaced_note_watch final : public core::note_watch {
public:
  unplaced_note_watch(const asio::any_io_executor& ex, error_code ec, std::string words,
                      core::note_watches::watch_events ev) {
    asio::post(ex, [alive = std::weak_ptr<int>(token_), ec, words = std::move(words),
                    ended = std::move(ev.ended)] {
      if (!alive.expired() && ended)
        ended(ec, words);
    });
  }

private:
  std::shared_ptr<int> token_ = std::make_shared<int>(0);
};
} // namespace

std::unique_ptr<core::note_watch> cluster_backend::watch_note(
    const core::lock_spec& lock, core::note_watches::watch_events events) {
  auto nodes = s_->nodes();
  auto node = nodes && !s_->stopped() ? nodes->connected_node_for(slot_of(lock)) : nullptr;
  if (node)
    return s_->on(node).backend.watch_note(lock, std::move(events));
  if (s_->stopped())
    return std::make_unique<unplaced_note_watch>(s_->ex, error::closed, "the client was closed",
                                                 std::move(events));
  return std::make_unique<unplaced_note_watch>(
      s_->ex, error::not_connected, "no master serving the lock's slot is connected",
      std::move(events));
}

std::size_t cluster_backend::channels() const {
  std::size_t n = 0;
  s_->each_node([&](node_locks& node) { n += node.backend.channels(); });
  return n;
}

std::size_t cluster_backend::owners_remembered() const {
  std::size_t n = 0;
  s_->each_node([&](node_locks& node) { n += node.backend.owners_remembered(); });
  return n;
}

} // namespace corolock::redis::detail
