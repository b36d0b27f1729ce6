// quorum_source: the engine over a quorum_backend, and what it checks of its members.
#include "composites/quorum/quorum_source.hpp"

#include "composites/quorum/quorum_backend.hpp"
#include "core/engine.hpp"
#include "core/handle.hpp"
#include "core/lease.hpp"
#include "core/source_access.hpp"
#include "detail/guard_access.hpp"

#include <corolock/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>

namespace corolock::composites {

namespace {
[[noreturn]] void refuse(const std::string& words) {
  throw boost::system::system_error(error::invalid_argument, "quorum_source: " + words);
}
} // namespace

quorum_source::quorum_source(std::vector<std::reference_wrapper<lock_source>> members,
                             quorum_options options) {
  if (members.empty())
    refuse("no member lock source given");
  std::string words;
  if (options.validate(words))
    refuse(words);
  auto st = std::make_shared<quorum_state>();
  for (std::size_t i = 0; i < members.size(); ++i) {
    auto* m = &members[i].get();
    if (m == this)
      refuse("member " + std::to_string(i + 1) + " is the quorum itself");
    if (std::find(st->members.begin(), st->members.end(), m) != st->members.end())
      refuse("member " + std::to_string(i + 1) + " of " + std::to_string(members.size()) +
             " is given twice (each member must be another store)");
    // A lock source names no executor: its lock core does (made now if its client makes it
    // lazily; no I/O).
    auto& core = core::source_access::core_of(*m);
    const auto ex = core.store().get_executor();
    if (i == 0) {
      st->ex = ex;
      st->clock = core.shared_from_this();
    } else if (ex != st->ex) {
      refuse("member " + std::to_string(i + 1) + " of " + std::to_string(members.size()) +
             " runs on another executor than member 1: every member must use one executor");
    }
    st->members.push_back(m);
    // Whether the member's store tells of releases (core::release_notices): its waiters wake
    // on them; without, they poll.
    st->notices.push_back(dynamic_cast<core::release_notices*>(&core.store()));
    st->cores.push_back(core.shared_from_this());
  }
  st->options = options;
  st->quorum = members.size() / 2 + 1;
  ex_ = st->ex;
  members_ = members.size();
  auto b = std::make_unique<quorum_backend>(std::move(st));
  backend_ = b.get();
  make_lock_core(std::move(b));
}

quorum_source::~quorum_source() {
  if (lock_core())
    lock_core()->close(std::chrono::milliseconds(0), [] {});
}

asio::any_io_executor quorum_source::get_executor() const noexcept { return ex_; }
std::size_t quorum_source::members() const noexcept { return members_; }
std::size_t quorum_source::quorum() const noexcept { return members_ / 2 + 1; }

std::size_t quorum_source::waiting_bids(const std::string& name) const {
  const auto& w = backend_->state().waiting;
  auto it = w.find(name);
  return it == w.end() ? 0 : it->second;
}

std::vector<std::uint64_t> quorum_source::member_tokens(const guard& g) {
  const auto& l = detail::guard_access::lease_of(g);
  if (!l || !g.owns_lock())
    return {};
  auto e = l->eng.lock();
  if (!e || e->store().traits().store != "quorum" || !l->ticket)
    return {};
  return static_cast<const quorum_lease&>(*l->ticket).tokens;
}

void quorum_source::async_close_impl(std::chrono::milliseconds bound,
                                     detail::handler<void(error_code)> h) {
  lock_core()->close(bound, [h = std::move(h)]() mutable {
    asio::dispatch(asio::append(std::move(h), error_code{}));
  });
}

} // namespace corolock::composites
