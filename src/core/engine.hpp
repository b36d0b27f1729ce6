// Private: the lock core over one backend — what a store's client owns to serve corolock's handles.
//
// An engine runs, on the backend's executor: the lines (one per lock, shared and permits of this
// client: its local callers first come first served, at most one contender open, the next one
// started at once while callers wait, or sent with the holder's release where the store carries it
// there: line.hpp), the leases it grants and their lost signal, the keeper
// (per_lock stores: one timer batching the renewals due in one window into one backend::renew;
// session stores: session_alive moves every lease of a session, session_lost ends them), guard
// releases, and close. It reads time and arms timers only through the backend, so the testing
// backend drives all of it on virtual time.
//
// A store's client (zookeeper::client, testing::store, …) holds a shared_ptr<engine> and, as a
// lock_source, forwards make_handle to it.
//
// Invariants: a line is kept while it has callers or an open bid and dropped once idle; after
// close() no line or lease is made again (acquisitions fail with error::closed, a grant still in
// flight is given back by the backend's close); every lease is in the keeper from its grant until
// it leaves the held state.
#pragma once

#include "core/backend.hpp"

#include <corolock/observer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>

namespace corolock::core {

class handle;
class keeper;
class waiting_line;
struct release_resend;

class engine : public std::enable_shared_from_this<engine> {
public:
  /// The core over `b`: sets b's hooks. The engine owns the backend.
  static std::shared_ptr<engine> create(std::unique_ptr<backend> b);
  /// For create() only (make_shared); the engine is not started.
  explicit engine(std::unique_ptr<backend> b);
  /// Not closed: fails every caller with error::closed and withdraws every bid (the backend
  /// outlives the lines' last deliveries), marks every lease lost.
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  backend& store() noexcept { return *b_; }
  const std::shared_ptr<backend>& store_ptr() const noexcept { return b_; }

  /// A handle of `kind` on `name`: throws system_error(error::invalid_argument), its what() naming
  /// `what` and the reason (bad name or options, or a trait the store lacks: backend::check).
  std::shared_ptr<handle> make_handle(lock_kind kind, std::string name, lock_options options,
                                      std::int64_t capacity, const char* what);

  /// Fails every waiting caller with error::closed, marks every lease lost (its guard told), and
  /// closes the backend (which gives back what it holds). Idempotent; later acquisitions fail with
  /// error::closed. Completes when the backend's close has, or once `bound` has passed on the
  /// backend's clock — then the backend gave up (backend::give_up) and left nothing running; what
  /// it did not give back ends at the store on its own. milliseconds::max(): no bound.
  void close(std::chrono::milliseconds bound, handler<void()> h);

  /// lock_source::set_observer; observer(): the one set (null: none, the hot path's one test).
  void set_observer(std::shared_ptr<lock_observer> o) { observer_ = std::move(o); }
  const std::shared_ptr<lock_observer>& observer() const noexcept { return observer_; }
  /// Posts `e` to the observer (there is one), its store's name filled in.
  void notify(lock_event e);
  /// The store's reachability as the core sees it, told to the observer (there is one) when it
  /// changes: store_silent when a request went unanswered (a bid ended unsure, a renewal
  /// unanswered, a release to send again), store_answered when the store answers again (the
  /// backend's reachable hook, a renewal or release answered). Without an observer: one test.
  void store_silent(error_code ec) {
    if (observer_ && !silent_)
      tell_reachability(false, ec);
  }
  void store_answered() {
    if (observer_ && silent_)
      tell_reachability(true, {});
  }

  /// Leases held and callers waiting (for tests and diagnostics).
  std::size_t held() const noexcept;
  std::size_t waiting() const noexcept;

  /// The line of (lock, shared, permits), made if needed.
  std::shared_ptr<waiting_line> line_of(const std::shared_ptr<const lock_spec>& spec,
                                        std::int64_t permits, bool shared);
  /// The line of (lock, shared, permits) if there is one (a lease that rides on its line finds it
  /// here: a line made anew since has nothing riding on the lease, and releases it alone).
  std::shared_ptr<waiting_line> line_if_any(const lock_spec& spec, std::int64_t permits,
                                            bool shared) const;
  /// An idle line leaves (it calls this itself, once idle, holding itself while it runs).
  void forget(const waiting_line& l);

  /// Releases `lease` at the store, owner-checked; `h` (may be empty) gets the first outcome. A
  /// release the store did not answer (not_connected, timeout, connection_lost) is sent again —
  /// after 50 ms, doubling to 2 s — until the store has run it, the store says the owner is gone,
  /// or the engine closes (whose backend close gives back what is still out): what a holder gave
  /// up, or lost while cut off, does not stay held at a store whose session outlived the cut.
  void send_release(core::held lease, handler<void(error_code, std::string)> h);
  /// send_release(lease, h), with the bid `b` of `owner` placed right after it in the same request
  /// where the store can (backend::release_then_bid; the line's "riding the release"): the first
  /// try carries the bid, a try after an unanswered one is the release alone (the bid ended unsure
  /// then, contract 6). Returns the bid's contender.
  std::unique_ptr<contender> send_release_with_bid(const core::held& lease,
                                                   handler<void(error_code, std::string)> h,
                                                   core::bid b, std::string owner,
                                                   contender_events& events);
  /// `l` holds a grant back until its session's next proof of life (waiting_line::parked_): it
  /// hears session_alive and session_lost until then.
  void parked(const std::shared_ptr<waiting_line>& l) { parked_.insert(l); }

  /// Gives `owner` back at the store (backend::give_back: its bid `b` ended unsure and nobody
  /// wants it), sent again as a release is, until the store has run it or the engine closes.
  void send_give_back(core::bid b, std::string owner);
  /// Sends `once` now, and again as a release is until it is answered (backend::hooks::resend);
  /// `h` (may be empty) gets the first outcome.
  void send_until_answered(backend::send_once once, handler<void(error_code, std::string)> h);
  /// Every request waiting for its next try is sent now (the store is reachable again).
  void resend_now();
  /// Stops every resend (the engine closes: the backend's close gives back what is still out).
  void drop_resends() noexcept;
  /// Releases still being sent again (for tests).
  std::size_t releases_pending() const noexcept { return resending_.size(); }

  /// A wait of the core outside every line (a rate_limiter's sleep between two takes): `at_close`
  /// runs once when the engine closes or goes, unless dropped first. `key` names it for
  /// drop_closer.
  void add_closer(const void* key, std::function<void()> at_close);
  void drop_closer(const void* key) noexcept { closers_.erase(key); }

  keeper& keep() noexcept { return *keeper_; }
  bool closed() const noexcept { return closed_; }

private:
  void start(); // sets the backend's hooks (needs shared_from_this)

  // A lock of one kind and name, with the lease its handle asked for (two handles of one name with
  // other leases wait in two lines), and what each caller of the line takes.
  /// A line serves one lock as the store knows it (kind, prefix, name, a semaphore's count) and one
  /// shape of bid and lease (lease, watchdog, and the store's options as its backend names them:
  /// lock_spec::line_tag): handles of one client that agree on all of it share a line (one bid at
  /// a time, contract 2); any difference is another line. Without the prefix, two handles of one
  /// name under different prefixes shared the first one's line and took the first one's lock;
  /// without the store's part (Redis: min_replicas), a handle asking for 1 replica right after one
  /// asking for 2 had its bid made with 2.
  using line_key = std::tuple<lock_kind, std::string, std::string, std::int64_t, std::int64_t,
                              bool, std::int64_t, bool, std::string>;
  static line_key key_of(const lock_spec& spec, std::int64_t permits, bool shared);

  std::shared_ptr<backend> b_;
  std::shared_ptr<keeper> keeper_;
  std::map<line_key, std::shared_ptr<waiting_line>> lines_;
  friend struct release_resend;
  std::set<std::shared_ptr<release_resend>> resending_; // waiting for their next try
  bool closed_ = false;
  std::shared_ptr<lock_observer> observer_;
  bool silent_ = false; ///< the observer was told `unreachable` last (store_silent)
  void tell_reachability(bool answered, error_code ec);
  /// The close under way: its caller's handler, and the bound's timer (the one close bound of
  /// every store: at it the backend gives up, whatever it still waits for).
  struct closing {
    std::optional<handler<void()>> h;
    std::unique_ptr<timer> bound;
    void finish(const asio::any_io_executor& ex);
  };
  std::shared_ptr<closing> closing_;
  std::set<std::shared_ptr<waiting_line>> parked_; // lines holding a grant back (session stores)
  std::map<const void*, std::function<void()>> closers_; // add_closer
  void tell_closers();
  /// The lines holding a grant back hear of `session` (each leaves the set once it has none).
  template <typename F>
  void tell_parked(F f);
  /// Calls `f` on every line, over a copy of the map: a line may leave it from inside the call.
  template <typename F>
  void for_each_line(F f);
};

} // namespace corolock::core
