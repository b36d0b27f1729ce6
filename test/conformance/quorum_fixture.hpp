// The conformance fixture of a quorum (src/composites/quorum): a quorum_source over one client of
// each of three independent stores, each store its own fixture M (the testing store, a private
// Redis server, …). A "client" of the suite is a quorum_source with three member clients of its own;
// cut off, all three of its members are; the store is clean when every member store is.
//
// What a quorum lacks, declared here so that the cases needing it skip themselves: a read-write
// lock and a semaphore (refused by traits), FIFO across clients (a waiter retries, no store-side
// queue: `unordered`), a single fencing token (`no_single_token`: the members' tokens are per
// member). queued(name) counts the bids waiting for the quorum, the quorum's virtual queue.
#pragma once

#include "cases.hpp"

#include "composites/quorum/quorum_source.hpp"

#include <array>
#include <set>

namespace corolock::conformance {

template <typename M>
struct quorum_fixture {
  /// A quorum source that the fixture can find while it lives (queued, cut_off).
  class source : public composites::quorum_source {
  public:
    source(quorum_fixture& f, std::vector<std::reference_wrapper<lock_source>> members,
           std::vector<typename M::source*> mine)
        : composites::quorum_source(std::move(members), options()), f_(f), mine_(std::move(mine)) {
      f_.live.insert(this);
    }
    ~source() override { f_.live.erase(this); }
    const std::vector<typename M::source*>& member_sources() const { return mine_; }

  private:
    static composites::quorum_options options() {
      composites::quorum_options o;
      o.retry_delay = std::chrono::milliseconds(20); // the cases' pace, not a service's
      if constexpr (requires { M::member_timeout; })
        o.per_member_timeout = M::member_timeout;
      return o;
    }
    quorum_fixture& f_;
    std::vector<typename M::source*> mine_;
  };

  static constexpr const char* backend = "quorum";
  static constexpr bool refuses_shared = true;
  static constexpr bool unordered = true;
  static constexpr bool renews_per_lock = true; // the quorum's leases are per lock: the keeper renews
  static constexpr bool no_single_token = true;
  static constexpr bool no_holder_token = true; // no single token to compare
  static constexpr bool refuses_bucket = true; // a quorum keeps no single count: no rate_limiter
  static constexpr bool refuses_marks = true; // a quorum keeps no marks: no segmented_lock over it

  std::array<M, 3> stores;
  std::vector<std::unique_ptr<typename M::source>> members; // outlive the quorum sources
  std::set<source*> live;

  asio::awaitable<std::unique_ptr<source>> connect(asio::any_io_executor ex) {
    std::vector<std::reference_wrapper<lock_source>> refs;
    std::vector<typename M::source*> mine;
    for (auto& s : stores) {
      members.push_back(co_await s.connect(ex));
      refs.emplace_back(*members.back());
      mine.push_back(members.back().get());
    }
    co_return std::make_unique<source>(*this, std::move(refs), std::move(mine));
  }
  asio::awaitable<void> close(source& c) { co_await c.async_close(); }
  void cut_off(source& c, bool off) {
    for (std::size_t i = 0; i < stores.size(); ++i)
      stores[i].cut_off(*c.member_sources()[i], off);
  }
  std::size_t queued(const std::string& name) {
    std::size_t n = 0;
    for (auto* s : live)
      n += s->waiting_bids(name);
    return n;
  }
  bool clean() {
    return std::all_of(stores.begin(), stores.end(), [](M& s) { return s.clean(); });
  }
  static std::optional<lock_options> lacking() { return M::lacking(); }
};

} // namespace corolock::conformance
