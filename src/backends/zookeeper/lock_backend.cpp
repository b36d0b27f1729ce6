// ZooKeeper behind the lock core's seam (lock_backend.hpp): each bid's recipe driven on the client.
#include "backends/zookeeper/lock_backend.hpp"

#include "backends/zookeeper/lock_access.hpp"
#include "backends/zookeeper/lock_paths.hpp"
#include "backends/zookeeper/lock_recipe.hpp"
#include "backends/zookeeper/holder.hpp"
#include "backends/zookeeper/marks.hpp"
#include "backends/zookeeper/notes.hpp"
#include "core/asio_timer.hpp"
#include "detail/completion.hpp"
#include "detail/random_id.hpp"

#include <corolock/error.hpp>
#include <corolock/zookeeper/client.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace corolock::zookeeper::detail {

using core::steady;
using corolock::detail::complete_later;
using std::chrono::milliseconds;

namespace {

constexpr core::backend_traits zookeeper_traits{
    .store = "zookeeper",
    .leases = core::lease_model::session,
    .fixed_lease = false,
    .read_write = true,
    .semaphore = true,
    .fifo = true,
    .holder_token = true,
    .marks = true,
    .notes = true,
};

node_kind node_kind_of(const core::bid& b) {
  if (b.lock->kind == core::lock_kind::read_write)
    return b.shared ? node_kind::read : node_kind::write;
  return node_kind::mutex;
}

/// A refusal for want of rights is the lock layer's permission_denied (the words keep the server's
/// code and the path); every other code goes on as it is.
error_code lock_error(error_code ec) {
  if (ec == zk_error::no_auth || ec == zk_error::auth_failed)
    return error::permission_denied;
  return ec;
}

/// A lock as this backend prepares it (core::backend::prepare), once per handle: its folder, the
/// prefix's root then node_name(lock.name) (lock_paths.hpp), escaped once.
struct zk_lock final : core::lock_ticket {
  explicit zk_lock(std::string d) : dir(std::move(d)) {}
  const std::string dir;
};

/// One bid's recipe, kept by the backend until nothing of it is left at the store (also after the
/// core has withdrawn it and destroyed its contender). A granted one is its lease's ticket
/// (grant::ticket): the core hands it back with the release, which deletes its node — no map by
/// owner finds it.
struct bid_run final : core::lease_ticket {
  explicit bid_run(lock_recipe r, core::contender_events* e) : recipe(std::move(r)), events(e) {}
  lock_recipe recipe;
  core::contender_events* events; ///< null once withdrawn or once its event was delivered
  bool settled = false;           ///< its event was delivered
  /// Granted and handed over, its node not yet gone: a release deletes it, and its deletion by
  /// someone else is the lease's loss (lease_gone).
  bool holding = false;
  std::unique_ptr<asio::steady_timer> bound; ///< see state::bound_by_session
  std::vector<core::handler<void(error_code, std::string)>> releases;
  /// Dropped at the session bound (an unsure end): replies to its requests are not followed (the
  /// core's next bid or give-back of the owner finds by owner what they made).
  bool dropped = false;
  /// A give-back (core::backend::give_back): completed once the recipe is done.
  std::optional<core::handler<void(error_code, std::string)>> given_back;
};

} // namespace

struct lock_backend::state : std::enable_shared_from_this<state> {
  state(client& c) : zk(&c), ex(c.get_executor()), client_id(corolock::detail::random_id().substr(0, 16)) {}

  client* zk;
  asio::any_io_executor ex;
  hooks told;
  std::string client_id;
  std::uint64_t owners = 0;
  /// Bids not yet over at the store, held ones among them (bid_run::holding): what a watch event
  /// or a reconnect concerns.
  std::set<std::shared_ptr<bid_run>> running;
  std::int64_t session = 0;
  std::int64_t told_session = 0;  ///< the session of the last on_alive report
  steady::time_point told_until = steady::time_point::min(); ///< the bound it told
  bool suspended = false;

  milliseconds margin() const { return zk ? zk->negotiated_timeout() / 10 : milliseconds(0); }

  /// Whether a session comes after an expiry (config::new_session_after_expiry, and the client not
  /// expired for good nor closed): only then is a bid the expiry ended unsure, not failed.
  bool session_follows() const {
    return zk && zk->get_config().new_session_after_expiry && zk->state() != session_state::expired &&
           zk->state() != session_state::closed;
  }

  /// Owners whose bid ended unsure (contract 6): a node of theirs may live. The core's next bid of
  /// one (the same owner) or its give-back looks the node up by owner before making one.
  std::set<std::string> unsure_owners;

  /// The note watches (watch_note), held weakly: the note_watch owns its watcher. Dropped here once
  /// over or gone, when a watch is added.
  std::vector<std::weak_ptr<note_watcher>> note_watchers;

  /// The live watchers, taken out first: a callback of one may add or destroy watches.
  std::vector<std::shared_ptr<note_watcher>> live_note_watchers() const {
    std::vector<std::shared_ptr<note_watcher>> live;
    for (const auto& weak : note_watchers)
      if (auto w = weak.lock(); w && !w->over())
        live.push_back(std::move(w));
    return live;
  }

  /// Every note watch ends (posted, once each): the session or the client is over.
  void end_note_watches(error_code ec, const std::string& words) {
    for (const auto& w : live_note_watchers())
      w->end(ec, words + "; the watch of the note " + w->node() + " ends");
    note_watchers.clear();
  }

  /// The client goes (detach): the releases and give-backs still waiting for the store complete
  /// now, with closed (posted). On an io_context torn down this is what destroys them: a release's
  /// handler may be the only owner of the coroutine awaiting it, which owns the guard, whose lease
  /// keeps the bid that keeps the handler — a cycle nothing else breaks once no reply can come.
  void complete_stored() {
    const std::string words = "the ZooKeeper client is gone";
    for (const auto& b : running) {
      for (auto& h : std::exchange(b->releases, {}))
        complete_later(ex, std::move(h), asio::cancellation_slot{}, error_code(error::closed), words);
      if (b->given_back) {
        auto h = std::move(*b->given_back);
        b->given_back.reset();
        complete_later(ex, std::move(h), asio::cancellation_slot{}, error_code(error::closed), words);
      }
    }
  }

  void run(std::shared_ptr<bid_run> b) {
    for (auto& a : b->recipe.take_actions()) {
      using k = lock_recipe::action::kind;
      switch (a.what) {
      case k::create_parent:
      case k::create:
      case k::list:
      case k::list_watch:
      case k::watch:
      case k::stat:
      case k::remove: send(b, a); break;
      case k::mark: mark(b, a.path); break;
      case k::granted:
        hand_over(b, a.token);
        break;
      case k::taken:
        if (auto* e = std::exchange(b->events, nullptr)) {
          b->settled = true;
          e->taken();
        }
        break;
      case k::failed:
        if (auto* e = std::exchange(b->events, nullptr)) {
          b->settled = true;
          auto words = a.words.empty() ? a.ec.message() : a.words + ": " + a.ec.message();
          if (a.ec == error::session_expired && session_follows()) {
            // Its node went with the session; the core bids again under the next one (the same
            // owner) for a caller with a deadline (contract 6).
            unsure_owners.insert(b->recipe.owner());
            e->unsure(error::session_expired, std::move(words));
          } else {
            e->failed(lock_error(a.ec), std::move(words));
          }
        }
        break;
      case k::released:
        for (auto& h : std::exchange(b->releases, {}))
          complete_later(ex, std::move(h), asio::cancellation_slot{}, a.ec, a.words);
        break;
      case k::done:
        running.erase(b);
        b->holding = false;
        if (b->given_back) {
          auto h = std::move(*b->given_back);
          b->given_back.reset();
          complete_later(ex, std::move(h), asio::cancellation_slot{}, error_code{}, std::string());
        }
        break;
      }
    }
  }

  /// Gives the grant to the core, valid until the session's bound (the lease's: alive_until minus
  /// the margin) — 0 ms when it has passed already (the reply that granted was read late: this
  /// process stopped, or the server slow to answer): the core then holds it back until a proof of
  /// life moves the bound past now (session_alive), or ends it when the session ends first.
  void hand_over(const std::shared_ptr<bid_run>& b, std::uint64_t token) {
    if (!b->events)
      return; // cannot happen: a withdrawn recipe grants nothing
    const auto now = steady::now();
    const auto until = zk ? zk->alive_until() - margin() : now;
    auto* e = std::exchange(b->events, nullptr);
    b->settled = true;
    b->holding = true;
    session = zk ? zk->session_id() : session;
    e->granted({.token = token,
                .from = now,
                .valid_for = std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(until - now)),
                .session = static_cast<std::uint64_t>(session),
                .ticket = b});
    watch_own_node(b);
  }

  /// A held node can go while its session lives (another client deletes it: an operator, a
  /// cleanup script); the next waiter then enters. So a holder keeps a watch on its own node (one
  /// per held lock, re-armed by the session after a reconnect) and its lease is lost when the node
  /// goes: here, if it is gone already when the watch is set, else in on_watch.
  void watch_own_node(const std::shared_ptr<bid_run>& b) {
    if (!zk || b->recipe.node().empty())
      return;
    zk->exists(b->recipe.node(), true,
               [w = weak_from_this(), b](error_code ec, const std::optional<node_stat>& st) {
                 if (auto self = w.lock(); self && !ec && !st)
                   self->own_node_gone(b);
               });
  }

  /// A semaphore's grant marks its node (setData) to wake the waiter watching it
  /// (semaphore_recipe.cpp). No reply is awaited, but a mark lost with the connection is sent
  /// again while the node is still the bid's: that waiter's session has nothing else to wake it.
  /// Sent before the holder's own watch on the node (watch_own_node), so it does not fire that.
  void mark(const std::shared_ptr<bid_run>& b, const std::string& path) {
    if (!zk)
      return;
    zk->set_data(path, "granted", -1, [w = weak_from_this(), b, path](error_code ec, const node_stat&) {
      auto self = w.lock();
      if (self && ec == error::connection_lost && !b->dropped && !b->recipe.finished() &&
          b->recipe.node() == path)
        self->mark(b, path);
    });
  }

  /// `b`'s node is gone at the store. Unless this client is deleting it (a release), its lease is
  /// lost now and the bid over (a later release says lease_lost, touching nothing).
  void own_node_gone(const std::shared_ptr<bid_run>& b) {
    if (!b->releases.empty() || !b->holding)
      return; // our own release, or over already
    const auto owner = b->recipe.owner();
    b->recipe.node_deleted();
    run(b);
    if (told.lease_gone)
      told.lease_gone(owner);
  }

  void send(const std::shared_ptr<bid_run>& b, const lock_recipe::action& a) {
    using k = lock_recipe::action::kind;
    const auto id = a.id;
    auto self = shared_from_this();
    if (!zk) { // detached: every request fails as on a closed client, never inline
      asio::post(ex, [self, b, id, what = a.what] { self->feed(b, what, id, error::closed); });
      return;
    }
    switch (a.what) {
    case k::create_parent:
      zk->create(a.path, "", create_mode::container, [self, b, id](error_code ec, const created&) {
        if (b->dropped)
          return;
        b->recipe.parent_created(id, ec);
        self->run(b);
      });
      break;
    case k::create:
      zk->create(a.path, "", create_mode::ephemeral_sequential, [self, b, id](error_code ec, const created& c) {
        if (b->dropped)
          return;
        b->recipe.created(id, ec, c.path, c.node.czxid);
        self->run(b);
      });
      break;
    case k::list:
    case k::list_watch:
      zk->get_children(a.path, a.what == k::list_watch, [self, b, id](error_code ec, const children& c) {
        if (b->dropped)
          return;
        b->recipe.listed(id, ec, c.names);
        self->run(b);
      });
      break;
    case k::watch:
    case k::stat:
      zk->exists(a.path, a.what == k::watch, [self, b, id](error_code ec, const std::optional<node_stat>& st) {
        if (b->dropped)
          return;
        b->recipe.looked(id, ec, st.has_value(), st ? st->czxid : 0, st ? st->version : 0);
        self->run(b);
      });
      break;
    case k::remove:
      zk->remove(a.path, -1, [self, b, id](error_code ec) {
        if (b->dropped)
          return;
        b->recipe.removed(id, ec);
        self->run(b);
      });
      break;
    default: break;
    }
  }

  void feed(const std::shared_ptr<bid_run>& b, lock_recipe::action::kind what, std::uint64_t id, error_code ec) {
    using k = lock_recipe::action::kind;
    switch (what) {
    case k::create_parent: b->recipe.parent_created(id, ec); break;
    case k::create: b->recipe.created(id, ec, "", 0); break;
    case k::list:
    case k::list_watch: b->recipe.listed(id, ec, {}); break;
    case k::watch:
    case k::stat: b->recipe.looked(id, ec, false, 0); break;
    case k::remove: b->recipe.removed(id, ec); break;
    default: break;
    }
    run(b);
  }

  void for_each_running(void (lock_recipe::*f)()) {
    const std::vector<std::shared_ptr<bid_run>> all(running.begin(), running.end());
    for (const auto& b : all) {
      (b->recipe.*f)();
      run(b);
    }
  }

  void on_watch(const watch_event& e) {
    if (e.type == event_type::none)
      return;
    // Watches name paths: a held node's deletion is found among the running bids (a held one runs
    // until its node is gone).
    const std::vector<std::shared_ptr<bid_run>> all(running.begin(), running.end());
    if (e.type == event_type::node_deleted)
      for (const auto& b : all)
        if (b->holding && b->recipe.node() == e.path)
          own_node_gone(b);
    if (e.type == event_type::node_data_changed) // a mark sent again after a reconnect: keep watching
      for (const auto& b : all)
        if (b->holding && b->recipe.node() == e.path)
          watch_own_node(b);
    for (const auto& b : all) {
      b->recipe.watch_fired(e.path);
      run(b);
    }
    // A note's node created, written or deleted: its watchers read it again, with a new watch.
    if (e.type == event_type::node_created || e.type == event_type::node_data_changed ||
        e.type == event_type::node_deleted)
      for (const auto& w : live_note_watchers())
        if (w->node() == e.path)
          w->poke();
  }

  void on_state(session_state s) {
    switch (s) {
    case session_state::suspended: suspended = true; break;
    case session_state::connected:
      if (std::exchange(suspended, false)) { // a watch may have been missed meanwhile: look again
        for_each_running(&lock_recipe::reconnected);
        for (const auto& w : live_note_watchers())
          w->poke();
      }
      if (told.reachable)
        told.reachable(); // bids the core held back go now
      break;
    case session_state::expired:
      if (session && told.session_lost)
        told.session_lost(static_cast<std::uint64_t>(session), error::session_expired);
      // A bid waiting on its watch hears nothing more from a session that is gone.
      for_each_running(&lock_recipe::session_ended);
      // Nor a note's watch (its server-side watch went with the session): the core places it again.
      end_note_watches(error::session_expired, "the ZooKeeper session expired");
      break;
    case session_state::closed:
      end_note_watches(error::closed, "the ZooKeeper session is closed");
      break;
    default: break;
    }
  }

  /// Contract 6: a bid made while the client has no session — a new one being asked for after an
  /// expiry, which has no give-up time — ends unsure (not_connected) once the client's own session
  /// bound (connect()'s) passes without one. Its recipe is dropped, not withdrawn: a create of it
  /// that lands on the new session is found by owner by the core's next bid or give-back.
  void bound_by_session(const std::shared_ptr<bid_run>& b) {
    const auto bound = lock_access::session_bound(*zk);
    b->bound = std::make_unique<asio::steady_timer>(ex, bound);
    b->bound->async_wait([w = weak_from_this(), wb = std::weak_ptr<bid_run>(b), bound](error_code ec) {
      auto self = w.lock();
      auto b = wb.lock();
      if (ec || !self || !b || !self->zk || self->zk->state() != session_state::connecting)
        return; // a session came within the bound: the bid goes on as any other
      auto* e = std::exchange(b->events, nullptr);
      if (!e)
        return; // settled or withdrawn meanwhile
      b->settled = true;
      b->dropped = true; // its replies, if any, are not followed
      self->running.erase(b);
      self->unsure_owners.insert(b->recipe.owner());
      e->unsure(error::not_connected, "no ZooKeeper session within " + std::to_string(bound.count()) +
                                          " ms (a new one is asked for after the last expired)");
    });
  }

  void on_alive(steady::time_point alive_until) {
    if (!zk)
      return;
    session = zk->session_id();
    if (std::exchange(told_session, session) != session)
      told_until = steady::time_point::min(); // a new session: nothing told of it yet
    const auto until = alive_until - margin();
    // The client's deadline moves back only when a reconnect negotiated a shorter timeout: the
    // core must then shorten the leases too (session_alive never moves one back).
    if (until < told_until && told.session_shortened)
      told.session_shortened(static_cast<std::uint64_t>(session), until);
    else if (told.session_alive)
      told.session_alive(static_cast<std::uint64_t>(session), until);
    told_until = until;
  }
};

namespace {

class zk_contender final : public core::contender {
public:
  zk_contender(std::weak_ptr<lock_backend::state> s, std::shared_ptr<bid_run> b)
      : s_(std::move(s)), b_(std::move(b)) {}
  void withdraw() override {
    if (b_->settled || withdrawn_)
      return; // after its event the lease is the core's: release(), not withdraw
    withdrawn_ = true;
    b_->events = nullptr;
    b_->recipe.withdraw();
    if (auto s = s_.lock())
      s->run(b_);
  }

private:
  std::weak_ptr<lock_backend::state> s_;
  std::shared_ptr<bid_run> b_;
  bool withdrawn_ = false;
};

} // namespace

lock_backend::lock_backend(client& c) : s_(std::make_shared<state>(c)) {
  std::weak_ptr<state> w = s_;
  lock_access::listen(c, {.watch = [w](const watch_event& e) { if (auto s = w.lock()) s->on_watch(e); },
                          .state = [w](session_state st) { if (auto s = w.lock()) s->on_state(st); },
                          .alive = [w](steady::time_point t) { if (auto s = w.lock()) s->on_alive(t); }});
}

lock_backend::~lock_backend() {
  detach();
  s_->told = {};
  for (const auto& b : s_->running)
    b->events = nullptr; // the core that listened is going
}

void lock_backend::detach() noexcept {
  if (s_->zk)
    lock_access::listen(*s_->zk, {});
  s_->zk = nullptr;
  s_->complete_stored();
  // Before the client goes: a watcher touches its client only while not over.
  s_->end_note_watches(error::closed, "the ZooKeeper client is gone");
}

const core::backend_traits& lock_backend::traits() const noexcept { return zookeeper_traits; }
asio::any_io_executor lock_backend::get_executor() const { return s_->ex; }
core::steady::time_point lock_backend::now() const { return steady::now(); }
std::unique_ptr<core::timer> lock_backend::make_timer() { return std::make_unique<core::asio_timer>(s_->ex); }

std::string lock_backend::new_owner() {
  // No '-': the recipe parses node names at their dashes (it would cope, but keep them plain).
  return s_->client_id + "." + std::to_string(++s_->owners);
}

bool lock_backend::known_unreachable() const noexcept {
  // Only `connected` has a server serving the session; every other state is known to have none.
  return !s_->zk || s_->zk->state() != session_state::connected;
}

error_code lock_backend::check(const core::lock_spec& lock, std::string& words) const {
  const auto refuse = [&](std::string why) {
    words = "ZooKeeper: " + std::move(why);
    return error_code(error::invalid_argument);
  };
  if (!lock.options.watchdog)
    return refuse("no fixed lease: a lock lives as long as its session (trait fixed_lease: false)");
  return {}; // any prefix and name: lock_root() and node_name() escape what a node cannot hold
}

std::shared_ptr<const core::lock_ticket> lock_backend::prepare(const core::lock_spec& lock) const {
  return ticket_for(lock);
}

void lock_backend::marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
                         core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) {
  if (!s_->zk) { // detached: as a closed client, never inline
    complete_later(s_->ex, std::move(h), {}, error_code(error::closed), std::vector<std::uint32_t>{},
                   std::string("the ZooKeeper client is closed"));
    return;
  }
  zookeeper_marks(*s_->zk, marks_folder(core::ticket_of<zk_lock>(lock).dir), what, index,
                  std::move(h));
}

void lock_backend::note(const core::lock_spec& lock, std::optional<core::lock_note> write,
                        core::handler<void(error_code, core::lock_note, std::string)> h) {
  if (!s_->zk) { // detached: as a closed client, never inline
    complete_later(s_->ex, std::move(h), {}, error_code(error::closed), core::lock_note{},
                   std::string("the ZooKeeper client is closed"));
    return;
  }
  zookeeper_note(*s_->zk, note_node(core::ticket_of<zk_lock>(lock).dir), std::move(write),
                 std::move(h));
}

namespace {
/// What watch_note hands out: its watcher lives while it does; destroying it stops the watcher at
/// once (nothing is told after), whatever of it is still out at the client.
class zk_note_watch final : public core::note_watch {
public:
  explicit zk_note_watch(std::shared_ptr<note_watcher> w) : w_(std::move(w)) {}
  ~zk_note_watch() override { w_->stop(); }

private:
  std::shared_ptr<note_watcher> w_;
};
} // namespace

std::unique_ptr<core::note_watch> lock_backend::watch_note(const core::lock_spec& lock,
                                                           core::note_watches::watch_events events) {
  auto w = std::make_shared<note_watcher>(s_->ex, note_node(core::ticket_of<zk_lock>(lock).dir),
                                          std::move(events));
  if (!s_->zk) { // detached: ended as on a closed client, posted
    w->end(error::closed, "the ZooKeeper client is closed");
  } else {
    std::erase_if(s_->note_watchers, [](const std::weak_ptr<note_watcher>& x) {
      auto live = x.lock();
      return !live || live->over();
    });
    s_->note_watchers.push_back(w);
    w->start(*s_->zk); // its replies come posted: nothing is told from here
  }
  return std::make_unique<zk_note_watch>(std::move(w));
}

void lock_backend::holder_token(const core::lock_spec& lock,
                                core::handler<void(error_code, std::uint64_t, std::string)> h) {
  if (!s_->zk) { // detached: as a closed client, never inline
    complete_later(s_->ex, std::move(h), {}, error_code(error::closed), std::uint64_t{0},
                   std::string("the ZooKeeper client is closed"));
    return;
  }
  zookeeper_holder_token(*s_->zk, core::ticket_of<zk_lock>(lock).dir, std::move(h));
}

std::shared_ptr<const core::lock_ticket> lock_backend::ticket_for(const core::lock_spec& lock) {
  return std::make_shared<const zk_lock>(lock_root(lock.options.prefix) + "/" + node_name(lock.name));
}

namespace {
lock_recipe recipe_of(const std::string& dir, const core::bid& b, const std::string& owner) {
  return b.lock->kind == core::lock_kind::semaphore
             ? lock_recipe(dir, owner, b.wait, b.permits, b.lock->capacity)
             : lock_recipe(dir, node_kind_of(b), owner, b.wait);
}
} // namespace

std::unique_ptr<core::contender> lock_backend::contend(core::bid b, std::string owner,
                                                       core::contender_events& events) {
  const auto& dir = core::ticket_of<zk_lock>(*b.lock).dir;
  // A bid answered at once, before any node is made (posted, as every event): nothing is left.
  const auto answered = [&](node_kind kind, error_code ec, std::string words) {
    auto run = std::make_shared<bid_run>(lock_recipe(dir, kind, owner, false), &events);
    asio::post(s_->ex, [run, ec, words = std::move(words)] {
      if (auto* e = std::exchange(run->events, nullptr)) {
        run->settled = true;
        e->failed(ec, words);
      }
    });
    return std::make_unique<zk_contender>(s_, run);
  };
  if (b.lock->kind == core::lock_kind::semaphore && b.permits > b.lock->capacity) // never grantable
    return answered(node_kind::permits, error::invalid_argument,
                    "the bid asks for more permits than semaphore '" + b.lock->name + "' has (" +
                        std::to_string(b.lock->capacity) + ")");
  auto run = std::make_shared<bid_run>(recipe_of(dir, b, owner), &events);
  s_->running.insert(run);
  // An owner whose last bid ended unsure may have a node: found by owner, not made twice.
  if (s_->unsure_owners.erase(owner))
    run->recipe.resume();
  else
    run->recipe.start();
  s_->run(run);
  if (s_->zk && s_->zk->state() == session_state::connecting)
    s_->bound_by_session(run);
  return std::make_unique<zk_contender>(s_, run);
}

void lock_backend::give_back(const core::bid& b, const std::string& owner,
                             core::handler<void(error_code, std::string)> h) {
  // A recipe of the owner that finds its node by owner and deletes it; done when nothing is left
  // (its session's end counts: the node went with it).
  const auto& dir = core::ticket_of<zk_lock>(*b.lock).dir;
  s_->unsure_owners.erase(owner);
  auto run = std::make_shared<bid_run>(recipe_of(dir, b, owner), nullptr);
  run->given_back.emplace(std::move(h));
  s_->running.insert(run);
  run->recipe.resume();
  run->recipe.withdraw();
  s_->run(run);
}

void lock_backend::release(const core::held& lease, core::handler<void(error_code, std::string)> h) {
  // The lease's ticket is its bid (hand_over): no lookup by owner.
  auto* b = core::ticket_of<bid_run>(lease);
  if (b == nullptr || !b->holding)
    return complete_later(s_->ex, std::move(h), asio::cancellation_slot{}, error_code(error::lease_lost),
                          std::string("this client holds no node of owner ") + lease.owner);
  b->releases.push_back(std::move(h));
  if (b->releases.size() == 1) // a second release of the same owner shares the first one's outcome
    b->recipe.release();
  s_->run(std::static_pointer_cast<bid_run>(lease.ticket));
}

void lock_backend::renew(std::vector<core::renewal> leases,
                         core::handler<void(std::vector<core::renew_outcome>)> h) {
  // Never called for a session store; answered "unknown" so the local deadline decides.
  complete_later(s_->ex, std::move(h), asio::cancellation_slot{},
                 std::vector<core::renew_outcome>(leases.size()));
}

void lock_backend::close(core::handler<void()> h) {
  // Closing the session deletes every node of ours at once; bids still open fail with closed, and
  // note watches end (closed) now rather than at the session's end.
  s_->end_note_watches(error::closed, "the ZooKeeper client is closing");
  if (!s_->zk)
    return complete_later(s_->ex, std::move(h), asio::cancellation_slot{});
  lock_access::close_session(*s_->zk, [h = std::move(h), ex = s_->ex](error_code) mutable {
    complete_later(ex, std::move(h), asio::cancellation_slot{});
  });
}

void lock_backend::give_up() {
  if (s_->zk)
    lock_access::give_up_session(*s_->zk);
}

void lock_backend::set_hooks(hooks h) { s_->told = std::move(h); }

} // namespace corolock::zookeeper::detail
