// election over any lock_source (its header): a mutex acquisition, then the leader's note written
// through the seam (backend::note); leader() reads the note and the holder's token
// (backend::holder_token). Nothing here knows a store.
//
// Invariants:
// - A campaign completes with a leadership only after its note says its own term (a store with
//   notes): leader() never names a leader whose campaign has not completed. Its lock is held from
//   the grant on; a failure or cancellation after the grant gives it back, and the operation
//   completes only once the release is answered (as a multi_lock's give-back: the caller that
//   sees the failure sees the lock free).
// - leader() names (term, value) only when the note's term is the holder's token read after the
//   note: that leader held the lock at the later read, so it led then. A holder whose token is
//   above the note's has not announced yet (or did after the note was read): the note is read
//   once more, then the answer is "nobody known".
// - observe() completes with the first note whose term is above the caller's, from a watch of the
//   note (core::note_watches): placed again after it ended for a transport reason (50 ms doubling
//   to 2 s, on the store's clock), until the client closes. A watch reads the note after it is in
//   place, and again when its link comes back, so no announcement is missed.
#include <corolock/lock/election.hpp>

#include "core/abortable.hpp"
#include "core/engine.hpp"
#include "core/handle.hpp"
#include "core/note_watches.hpp"
#include "core/source_access.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/executor_check.hpp"
#include "detail/printable_name.hpp"
#include "detail/spawn.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

namespace corolock {

namespace detail {

struct leadership_access {
  static leadership make(guard g, std::string value) {
    leadership l;
    l.guard_ = std::move(g);
    l.value_ = std::move(value);
    return l;
  }
};

} // namespace detail

namespace composites {

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using detail::cancelled;

std::string label(const core::handle& h) {
  return "corolock::election " + detail::printable_name(h.spec->name);
}

/// The lock's note, written first when `write` has a value; the caller's cancellation (any type)
/// completes it with operation_aborted (the request goes on, and is harmless: contract 3).
asio::awaitable<std::tuple<error_code, core::lock_note>>
call_note(std::shared_ptr<core::engine> eng, std::shared_ptr<const core::lock_spec> spec,
          std::optional<core::lock_note> write, diagnostics* said) {
  auto ex = co_await asio::this_coro::executor;
  co_return co_await asio::async_initiate<decltype(tuple_awaitable), void(error_code, core::lock_note)>(
      [&](auto handler) {
        auto op = core::abortable<core::lock_note>::make(ex, said, std::move(handler),
                                                         asio::cancellation_type::all);
        eng->store().note(*spec, std::move(write),
                          [op](error_code ec, core::lock_note n, std::string words) {
                            op->finish(ec, words, std::move(n));
                          });
      },
      tuple_awaitable);
}

asio::awaitable<std::tuple<error_code, std::uint64_t>>
call_holder_token(std::shared_ptr<core::engine> eng, std::shared_ptr<const core::lock_spec> spec,
                  diagnostics* said) {
  auto ex = co_await asio::this_coro::executor;
  co_return co_await asio::async_initiate<decltype(tuple_awaitable), void(error_code, std::uint64_t)>(
      [&](auto handler) {
        auto op = core::abortable<std::uint64_t>::make(ex, said, std::move(handler),
                                                       asio::cancellation_type::all);
        eng->store().holder_token(*spec, [op](error_code ec, std::uint64_t token, std::string words) {
          op->finish(ec, words, token);
        });
      },
      tuple_awaitable);
}

/// Gives `g` back and waits for the answer, whatever the caller does meanwhile.
asio::awaitable<void> give_back(guard& g) {
  co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
  if (g.owns_lock())
    co_await g.unlock(tuple_awaitable);
}

asio::awaitable<std::pair<error_code, leadership>>
campaign(std::shared_ptr<core::handle> h, std::string value, core::steady::time_point deadline,
         diagnostics* diag) {
  // Giving back after a cancellation needs further co_awaits: do not throw on them.
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  diagnostics said;
  auto won = co_await asio::async_initiate<decltype(tuple_awaitable), void(error_code, guard)>(
      [&h, &said, deadline](auto handler) {
        h->acquire(1, false, deadline, false, &said, std::move(handler));
      },
      tuple_awaitable);
  const error_code ec = std::get<0>(won);
  guard g = std::move(std::get<1>(won));
  if (ec) {
    if (diag)
      *diag = said;
    co_return std::pair{ec, leadership{}};
  }
  // (a coroutine lambda: its parameters by value, g++ 12)
  const auto fail = [&](error_code why, std::string words) -> asio::awaitable<std::pair<error_code, leadership>> {
    co_await give_back(g);
    if (diag && why != asio::error::operation_aborted)
      detail::diagnostics_access::client(diag, label(*h) + ": " + words);
    co_return std::pair{why, leadership{}};
  };
  auto eng = h->engine_of();
  if (!eng || eng->closed())
    co_return co_await fail(error::closed, "the client is closed");
  if (eng->store().traits().notes) {
    diagnostics note_said;
    // Named arguments and awaitable: g++ 12 destroys a temporary inside a co_await expression
    // twice ("free(): invalid size" from the optional note).
    std::optional<core::lock_note> write(std::in_place, g.fencing_token(), value);
    auto writing = call_note(eng, h->spec, std::move(write), &note_said);
    auto [nec, stored] = co_await std::move(writing);
    if (nec == asio::error::operation_aborted)
      co_return co_await fail(nec, {});
    if (nec)
      co_return co_await fail(nec, "the leader's note was not written: " + note_said.message());
    if (stored.term != g.fencing_token())
      co_return co_await fail(error::lease_lost,
                              "a later leader's note (term " + std::to_string(stored.term) +
                                  ") was found: this leadership's lease ended before its note");
  }
  if (g.lost())
    co_return co_await fail(error::lease_lost, "the lease was lost before the campaign completed");
  // The lock may have been won as the caller cancelled: the caller's word wins.
  if (co_await cancelled())
    co_return co_await fail(asio::error::operation_aborted, {});
  co_return std::pair{error_code{}, detail::leadership_access::make(std::move(g), std::move(value))};
}

asio::awaitable<std::pair<error_code, std::optional<leader_info>>>
read_leader(std::shared_ptr<core::handle> h, diagnostics* diag) {
  using answer = std::pair<error_code, std::optional<leader_info>>;
  auto eng = h->engine_of();
  if (!eng || eng->closed())
    co_return answer{error::closed, std::nullopt};
  const std::optional<core::lock_note> read_only; // (named: see campaign)
  auto reading = call_note(eng, h->spec, read_only, diag);
  auto [nec, note] = co_await std::move(reading);
  if (nec)
    co_return answer{nec, std::nullopt};
  for (int reads = 0;; ++reads) {
    auto asking = call_holder_token(eng, h->spec, diag);
    auto [hec, holder] = co_await std::move(asking);
    if (hec)
      co_return answer{hec, std::nullopt};
    if (holder == 0)
      co_return answer{};
    if (holder == note.term)
      co_return answer{error_code{}, leader_info{note.term, std::move(note.value)}};
    if (reads == 1) // the holder has not announced (its campaign has not completed)
      co_return answer{};
    auto rereading = call_note(eng, h->spec, read_only, diag);
    auto [again, later] = co_await std::move(rereading);
    if (again)
      co_return answer{again, std::nullopt};
    if (later.term == note.term) // no newer note: the holder has not announced
      co_return answer{};
    note = std::move(later);
  }
}

/// One observe(): the watch of the note, placed again after a transport end, until a note above
/// `after` or the caller's end. It keeps itself alive while it runs (self).
class observation : public std::enable_shared_from_this<observation> {
public:
  observation(std::shared_ptr<core::handle> h, std::uint64_t after) : h_(std::move(h)), after_(after) {}

  void start(diagnostics* diag, detail::handler<void(error_code, leader_info)> handler) {
    self_ = shared_from_this();
    op_ = core::abortable<leader_info>::make(h_->ex, diag, std::move(handler),
                                             asio::cancellation_type::all,
                                             [w = weak_from_this()] {
                                               if (auto s = w.lock())
                                                 s->stop();
                                             });
    place();
  }

private:
  static bool transient(error_code ec) {
    return ec == error::not_connected || ec == error::timeout || ec == error::connection_lost ||
           ec == error::session_expired;
  }

  void place() {
    auto eng = h_->engine_of();
    if (!eng || eng->closed())
      return finish(error::closed, "the client is closed", {});
    auto* watches = dynamic_cast<core::note_watches*>(&eng->store());
    if (!watches) // refused before it started (election::refusal): not reached
      return finish(error::invalid_argument, "the store watches no notes", {});
    auto w = weak_from_this();
    watch_ = watches->watch_note(
        *h_->spec,
        {[w](core::lock_note n) {
           if (auto s = w.lock())
             s->changed(std::move(n));
         },
         [w](error_code ec, std::string words) {
           if (auto s = w.lock())
             s->ended(ec, std::move(words));
         }});
  }

  void changed(core::lock_note n) {
    backoff_ = std::chrono::milliseconds(50);
    if (n.term > after_)
      finish({}, {}, leader_info{n.term, std::move(n.value)});
  }

  void ended(error_code ec, std::string words) {
    auto eng = h_->engine_of();
    if (!transient(ec) || !eng || eng->closed())
      return finish(ec, words, {});
    // The watch ends; the link may come back: place it again later (the ended watch destroyed on
    // a later turn: this runs inside its callback).
    asio::post(h_->ex, [done = std::move(watch_)] {});
    if (!timer_)
      timer_ = eng->store().make_timer();
    timer_->arm(eng->store().now() + backoff_, [w = weak_from_this()] {
      if (auto s = w.lock())
        s->place();
    });
    backoff_ = std::min<std::chrono::milliseconds>(backoff_ * 2, std::chrono::seconds(2));
  }

  void finish(error_code ec, const std::string& words, leader_info who) {
    op_->finish(ec, words.empty() ? words : label(*h_) + ": " + words, std::move(who));
    stop();
  }

  /// Lets the watch and the timer go; the last reference may be this call's. The watch is
  /// destroyed on a later turn: this may run inside its own callback.
  void stop() {
    auto keep = std::move(self_);
    if (watch_)
      asio::post(h_->ex, [done = std::move(watch_)] {});
    if (timer_)
      timer_->disarm();
  }

  std::shared_ptr<core::handle> h_;
  std::uint64_t after_;
  std::shared_ptr<core::abortable<leader_info>> op_;
  std::unique_ptr<core::note_watch> watch_;
  std::unique_ptr<core::timer> timer_;
  std::chrono::milliseconds backoff_{50};
  std::shared_ptr<observation> self_;
};

} // namespace

} // namespace composites

election::election(lock_source& source, std::string name, lock_options options)
    : state_(core::source_access::make(source, core::lock_kind::mutex, std::move(name),
                                       std::move(options), 1, "corolock::election")) {
  const auto eng = state_->engine_of();
  if (eng && !eng->store().traits().rising_token)
    throw boost::system::system_error(
        error::invalid_argument,
        composites::label(*state_) + ": the " + std::string(eng->store().traits().store) +
            " store draws no single rising token per lock (backend_traits::rising_token): an "
            "election's terms could not rise");
}

election::~election() = default;
election::election(election&&) noexcept = default;
election& election::operator=(election&&) noexcept = default;

const std::string& election::name() const noexcept { return state_->spec->name; }

void election::async_campaign_impl(std::string value, clock::time_point deadline,
                                   diagnostics* diag,
                                   detail::handler<void(error_code, leadership)> h) {
  detail::check_executor(state_->ex, "corolock::election::campaign", state_->spec->name);
  if (value.size() > max_value) {
    detail::diagnostics_access::client(
        diag, composites::label(*state_) + ": a value of " + std::to_string(value.size()) +
                  " bytes; campaign() takes at most election::max_value (" +
                  std::to_string(max_value) + ")");
    detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument),
                           leadership{});
    return;
  }
  detail::spawn_op(state_->ex, composites::campaign(state_, std::move(value), deadline, diag),
                   std::move(h));
}

std::string election::refusal(const char* what, bool watch) const {
  auto eng = state_->engine_of();
  if (!eng || eng->closed())
    return {}; // error::closed follows
  auto& store = eng->store();
  const auto& traits = store.traits();
  const char* lacking = !traits.holder_token ? "cannot tell its holder's token (backend_traits::holder_token)"
                        : !traits.notes      ? "keeps no notes (backend_traits::notes)"
                        : watch && !dynamic_cast<core::note_watches*>(&store)
                            ? "cannot watch a note (core::note_watches)"
                            : nullptr;
  if (!lacking)
    return {};
  return composites::label(*state_) + ": the " + std::string(traits.store) + " store " + lacking +
         ": " + what + " cannot tell who leads; campaign() and the lost signal work";
}

void election::async_leader_impl(diagnostics* diag,
                                 detail::handler<void(error_code, std::optional<leader_info>)> h) {
  detail::check_executor(state_->ex, "corolock::election::leader", state_->spec->name);
  if (auto words = refusal("leader()", false); !words.empty()) {
    detail::diagnostics_access::client(diag, words);
    detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument),
                           std::optional<leader_info>{});
    return;
  }
  detail::spawn_op(state_->ex, composites::read_leader(state_, diag), std::move(h));
}

void election::async_observe_impl(std::uint64_t after, diagnostics* diag,
                                  detail::handler<void(error_code, leader_info)> h) {
  detail::check_executor(state_->ex, "corolock::election::observe", state_->spec->name);
  if (auto words = refusal("observe()", true); !words.empty()) {
    detail::diagnostics_access::client(diag, words);
    detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument),
                           leader_info{});
    return;
  }
  std::make_shared<composites::observation>(state_, after)->start(diag, std::move(h));
}

} // namespace corolock
