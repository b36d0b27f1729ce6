// The flash-sale ("seckill") order flow of the example: what a buyer's click does, under which
// locks, and the checks that prove afterwards that nothing was oversold or ordered twice.
#pragma once

#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace flash {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

struct settings {
  int products = 5000;       ///< part 1: products with stock 1 ...
  int buyers = 5000;         ///< ... and the buyers who want one of them
  int hot_stock = 1000;      ///< part 2: the one hot product's stock ...
  int hot_buyers = 5000;     ///< ... and its buyers
  int segments = 20;         ///< ... split over this many segments
  int instances = 4;         ///< app servers: each its own client, locks and local caches
  std::chrono::microseconds work{1000}; ///< the order's database write, inside the lock
  double double_click = 0.3; ///< share of buyers who click twice at once
  double reclick = 0.1;      ///< share who click again after their answer
  bool user_lock = true;     ///< false shows what goes wrong without the per-user lock
  int checkout_slots = 8;    ///< orders written at once, over every instance (a semaphore); 0: any
  /// The front door: clicks let in per second over every instance (a rate_limiter per scenario,
  /// kept by Redis); 0: no door. A click without a token is answered "busy, try again" at once.
  /// 20 000/s is about what the shop answers at its busiest here (part 1), so the door sheds the
  /// arrival burst (5 000 buyers, 6 500 clicks at once) and then lets the sale run; a lower rate
  /// turns more away, and every refusal comes back as one more take, slowing the whole run.
  double admit_rate = 20000;
  int admit_burst = 500;     ///< ... and let in at once (the bucket's size)
  /// A buyer turned away at the door clicks again after 1 to 2 times this (spread, so that the
  /// turned-away do not all come back at the same instant).
  std::chrono::milliseconds door_pause{50};
  std::chrono::seconds lock_timeout{60};
  unsigned seed = 0;
};

/// One app server. Nothing is shared in memory between instances: what they agree on, they agree
/// on through Redis.
struct instance {
  instance(asio::any_io_executor ex, const corolock::redis::client_config& cfg) : redis(ex, cfg) {}
  corolock::redis::client redis;
  std::optional<corolock::redis::id_generator> ids;
  corolock::lock_options lock_opts;
  // The front door of the current scenario (the same bucket in every instance), or none.
  std::optional<corolock::rate_limiter> door;
  // Part 2, single lock.
  std::optional<corolock::mutex> hot;
  bool hot_sold_out = false;                    // local hint, set by a buyer who saw stock 0
  std::optional<asio::steady_timer> sold_out;   // never expires; cancel() tells the waiters
  // Part 2, segments.
  std::optional<corolock::segmented_lock> hot_segments;
  // Part 1: local hints of products seen sold out (the stock under the lock is the truth).
  std::vector<char> product_sold_out;
};

/// Where one run of the flow keeps its data: "<base><scenario>:..." in Redis.
struct keys {
  std::string base;     ///< "flash:<run>:"
  std::string scenario; ///< "p1", "single", "seg"
  std::string prefix() const { return base + scenario + ":"; }
  std::string orders() const { return prefix() + "orders"; }       ///< hash id -> "user|product"
  std::string orders_of() const { return prefix() + "orders_of"; } ///< hash "user|product" -> n
  std::string order_count() const { return prefix() + "order_count"; }
  std::string id_clashes() const { return prefix() + "id_clashes"; } ///< HSETNX refused an id
  std::string checkouts() const { return prefix() + "checkouts"; }   ///< orders being written now
  std::string checkout_peak() const { return prefix() + "checkout_peak"; } ///< the most at once
  std::string stock(const std::string& item) const { return prefix() + "stock:" + item; }
};

enum class lock_kind { per_product, single, segmented };

/// What a scenario counts while it runs. The checks read Redis, not this — except the front
/// door's bound, which holds over time and so is checked against the run's own clock.
struct tally {
  int clicks = 0, ordered = 0, already_ordered = 0, sold_out = 0, busy = 0, errors = 0;
  int double_clickers = 0, reclickers = 0;
  int admitted = 0, turned_away = 0; ///< clicks the front door let in / answered "busy, try again"
  clock::time_point started{}, first_sale{}, last_sale{}, finished{};
  clock::time_point last_admitted{}; ///< when the last click let in had its answer from the door
  double sell_seconds() const { return std::chrono::duration<double>(last_sale - started).count(); }
  double first_sale_seconds() const {
    return std::chrono::duration<double>(first_sale - started).count();
  }
  /// Orders per second from the first sale to the last: the locks' rate once buyers are lined up.
  double selling_rate() const {
    auto d = std::chrono::duration<double>(last_sale - first_sale).count();
    return ordered > 1 && d > 0 ? (ordered - 1) / d : 0;
  }
  double total_seconds() const { return std::chrono::duration<double>(finished - started).count(); }
  /// From the buyers' arrival to the last admission: every take at the door happened at the store
  /// within this span, so at most rate × this + burst clicks can have been let in.
  double admitting_seconds() const {
    return admitted > 0 ? std::chrono::duration<double>(last_admitted - started).count() : 0;
  }
};

struct scenario {
  lock_kind kind = lock_kind::per_product;
  keys k;
  int stock_total = 0; ///< units for sale
  tally t;
};

/// Writes the stock keys of a scenario (and resets nothing else: keys are fresh per run).
asio::awaitable<void> stock_up(corolock::redis::client& redis, const scenario& sc, const settings& s);

/// Runs the buyers of a scenario, all arriving at once, spread over the instances; with
/// `settings::admit_rate`, behind the scenario's front door (`<scenario>:door`).
asio::awaitable<void> run_buyers(std::vector<std::unique_ptr<instance>>& instances, scenario& sc,
                                 const settings& s, int buyers);

/// What the checks found for one scenario, from Redis.
struct verdict {
  std::int64_t orders = 0, order_count = 0, id_clashes = 0;
  std::int64_t sold = 0, remaining = 0, initial = 0;
  std::int64_t products_bad = 0;     ///< sold + remaining != initial, or remaining < 0
  std::int64_t products_unsold = 0;  ///< part 1: products not sold exactly once
  std::int64_t users_twice = 0;      ///< (user, product) pairs with more than one order
  std::int64_t bad_ids = 0;          ///< sign bit set
  std::int64_t checkout_peak = 0;    ///< the most orders written at once
  double door_bound = 0;             ///< the most clicks the front door may have let in
  std::vector<std::uint64_t> ids;    ///< every order id, for the global uniqueness check
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};

asio::awaitable<verdict> verify(corolock::redis::client& redis, const scenario& sc, const settings& s);

/// Deletes every key of a run (SCAN MATCH "<base>*", bounded).
asio::awaitable<std::size_t> clean_up(corolock::redis::client& redis, const std::string& base);

} // namespace flash
