#include "shop.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/system/system_error.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <map>

namespace flash {

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

template <typename... Args>
corolock::redis::request cmd(const Args&... args) {
  corolock::redis::request r;
  r.push(args...);
  return r;
}

asio::awaitable<void> pause(clock::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(tuple_awaitable);
}

[[noreturn]] void fail(corolock::error_code ec, const std::string& what) {
  throw boost::system::system_error(ec, what);
}

/// What a click is answered. `busy`: a lock was not had in time; `turned_away`: the front door
/// had no token for it ("busy, try again") and nothing else was done.
enum class outcome { ordered, already_ordered, sold_out, busy, turned_away };

/// "user|product": the one order a user may have of a product.
std::string buyer_key(int user, const std::string& item) {
  return std::to_string(user) + "|" + item;
}

std::string segment_item(int i) { return "hot#" + std::to_string(i); }

corolock::redis::request order_request(const keys& k, std::uint64_t id, const std::string& buyer) {
  corolock::redis::request r;
  r.push("HSETNX", k.orders(), std::to_string(id), buyer)
      .push("HINCRBY", k.orders_of(), buyer, 1)
      .push("INCR", k.order_count());
  return r;
}

// Counts a checkout in and keeps the highest count seen, atomically (the checks compare it with
// the semaphore's permits).
constexpr const char* checkout_in = R"(
local now = redis.call('incr', KEYS[1])
if now > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], now) end
return now)";

/// Creates the order. The caller holds the stock's lock and has just taken one unit. At most
/// `checkout_slots` orders are written at once over all instances (the order database's limit):
/// a semaphore's permit each.
asio::awaitable<void> create_order(instance& in, scenario& sc, const settings& s,
                                   const std::string& buyer) {
  corolock::guard slot;
  if (s.checkout_slots > 0) {
    corolock::semaphore checkout(in.redis, sc.k.scenario + ":checkout", s.checkout_slots,
                                 in.lock_opts);
    auto [ec, g] = co_await checkout.acquire_for(s.lock_timeout, tuple_awaitable);
    if (ec)
      fail(ec, "checkout slot");
    slot = std::move(g);
    corolock::redis::request count;
    count.push("EVAL", checkout_in, "2", sc.k.checkouts(), sc.k.checkout_peak());
    co_await in.redis.exec(std::move(count));
  }
  auto id = co_await in.ids->next();
  auto replies = co_await in.redis.exec(order_request(sc.k, id, buyer));
  if (replies.at(0).integer == 0) // HSETNX found the id taken: the checks report it
    co_await in.redis.exec(cmd("INCR", sc.k.id_clashes()));
  co_await pause(s.work); // the order's database write
  if (slot) {
    co_await in.redis.exec(cmd("DECR", sc.k.checkouts()));
    co_await slot.unlock();
  }
  sc.t.last_sale = clock::now();
  if (sc.t.first_sale == clock::time_point{})
    sc.t.first_sale = sc.t.last_sale;
}

/// GET, then DECR: two commands, safe only because the caller holds the stock's lock.
asio::awaitable<long> stock_left(instance& in, const std::string& key) {
  auto got = co_await in.redis.exec(cmd("GET", key));
  co_return got.at(0).is_null() ? 0 : std::stol(got.at(0).data);
}

// Part 1: every product has its own lock.
asio::awaitable<outcome> take_product(instance& in, scenario& sc, const settings& s,
                                      const std::string& buyer, int product) {
  const std::string item = std::to_string(product);
  corolock::mutex m(in.redis, sc.k.scenario + ":product:" + item, in.lock_opts);
  auto [ec, g] = co_await m.acquire_for(s.lock_timeout, tuple_awaitable);
  if (ec == corolock::error::timeout)
    co_return outcome::busy;
  if (ec)
    fail(ec, "product lock");
  const long stock = co_await stock_left(in, sc.k.stock(item));
  if (stock <= 0) {
    in.product_sold_out[static_cast<std::size_t>(product)] = 1;
    co_await g.unlock();
    co_return outcome::sold_out;
  }
  co_await in.redis.exec(cmd("DECR", sc.k.stock(item)));
  co_await create_order(in, sc, s, buyer);
  if (stock == 1)
    in.product_sold_out[static_cast<std::size_t>(product)] = 1;
  co_await g.unlock();
  co_return outcome::ordered;
}

// Part 2a: the hot product behind one lock. Its waiters also listen for "sold out" (an
// instance-local hint) so that they leave the queue at once instead of each taking the lock to
// see a zero.
asio::awaitable<outcome> take_hot_single(instance& in, scenario& sc, const settings& s,
                                         const std::string& buyer) {
  using namespace asio::experimental::awaitable_operators;
  if (in.hot_sold_out)
    co_return outcome::sold_out;
  auto first = co_await (in.hot->acquire_for(s.lock_timeout, tuple_awaitable) ||
                         in.sold_out->async_wait(tuple_awaitable));
  if (first.index() == 1)
    co_return outcome::sold_out; // the acquisition was cancelled; the mutex left nothing behind
  auto [ec, g] = std::move(std::get<0>(first));
  if (ec == corolock::error::timeout)
    co_return outcome::busy;
  if (ec)
    fail(ec, "hot lock");
  const std::string key = sc.k.stock("hot");
  const long stock = co_await stock_left(in, key);
  if (stock > 0) {
    co_await in.redis.exec(cmd("DECR", key));
    co_await create_order(in, sc, s, buyer);
  }
  if (stock <= 1 && !in.hot_sold_out) {
    in.hot_sold_out = true;
    in.sold_out->cancel();
  }
  co_await g.unlock();
  co_return stock > 0 ? outcome::ordered : outcome::sold_out;
}

// Part 2b: the hot product's stock in segments. A buyer takes any free segment; a segment found
// empty is marked so that nobody comes back to it, and the buyer moves on to another.
asio::awaitable<outcome> take_hot_segment(instance& in, scenario& sc, const settings& s,
                                          const std::string& buyer) {
  for (int attempt = 0; attempt <= s.segments; ++attempt) {
    auto [ec, sg] = co_await in.hot_segments->acquire_any_for(s.lock_timeout, tuple_awaitable);
    if (ec == corolock::error::exhausted)
      co_return outcome::sold_out;
    if (ec == corolock::error::timeout)
      co_return outcome::busy;
    if (ec)
      fail(ec, "hot segment");
    const std::string key = sc.k.stock(segment_item(static_cast<int>(sg.index())));
    const long stock = co_await stock_left(in, key);
    if (stock > 0) {
      co_await in.redis.exec(cmd("DECR", key));
      co_await create_order(in, sc, s, buyer);
    }
    if (stock <= 1) // this segment is done: spare everyone a trip to it
      co_await in.hot_segments->mark_empty(sg.index());
    co_await sg.unlock();
    if (stock > 0)
      co_return outcome::ordered;
  }
  co_return outcome::busy;
}

/// The cheap look before any lock: is it known to be gone? A stale "no" costs a trip to the lock,
/// where the stock is checked again; "yes" is final, as stock only ever goes down.
asio::awaitable<bool> known_sold_out(instance& in, scenario& sc, int product) {
  switch (sc.kind) {
  case lock_kind::per_product: {
    auto& hint = in.product_sold_out[static_cast<std::size_t>(product)];
    // (the look apart from the test of `hint`: g++ 12 miscompiles a co_await in an operand of &&)
    if (!hint) {
      if (co_await stock_left(in, sc.k.stock(std::to_string(product))) <= 0)
        hint = 1;
    }
    co_return hint != 0;
  }
  case lock_kind::single:
    co_return in.hot_sold_out;
  default:
    co_return in.hot_segments->empty_count() == in.hot_segments->segments();
  }
}

/// The front door, before anything else (seed 004's 限流 at the entrance: a gateway's token
/// bucket sends what it cannot take to a "try again" page). One take of the scenario's bucket in
/// Redis, shared by every instance: true when the click may go on. A click turned away costs the
/// shop nothing beyond this one take — no look at the stock, no lock.
asio::awaitable<bool> let_in(instance& in, scenario& sc) {
  if (!in.door)
    co_return true;
  auto [ec, admitted] = co_await in.door->try_acquire(1, tuple_awaitable);
  if (ec)
    fail(ec, "front door");
  if (!admitted) {
    ++sc.t.turned_away;
    co_return false;
  }
  ++sc.t.admitted;
  sc.t.last_admitted = clock::now();
  co_return true;
}

/// One click of the "buy" button.
asio::awaitable<outcome> click(instance& in, scenario& sc, const settings& s, int user,
                               int product) {
  ++sc.t.clicks;
  if (!co_await let_in(in, sc))
    co_return outcome::turned_away; // "busy, try again"
  if (co_await known_sold_out(in, sc, product)) {
    ++sc.t.sold_out;
    co_return outcome::sold_out;
  }
  const std::string item = sc.kind == lock_kind::per_product ? std::to_string(product) : "hot";
  const std::string buyer = buyer_key(user, item);
  // One order per user and product: the check and the order must not interleave with another
  // click of the same user, so both run under the user's lock.
  corolock::guard user_guard;
  if (s.user_lock) {
    corolock::mutex m(in.redis, sc.k.scenario + ":buyer:" + buyer, in.lock_opts);
    auto [ec, g] = co_await m.acquire_for(s.lock_timeout, tuple_awaitable);
    if (ec == corolock::error::timeout) {
      ++sc.t.busy;
      co_return outcome::busy;
    }
    if (ec)
      fail(ec, "user lock");
    user_guard = std::move(g);
  }
  outcome out;
  auto has = co_await in.redis.exec(cmd("HEXISTS", sc.k.orders_of(), buyer));
  if (has.at(0).integer == 1) {
    out = outcome::already_ordered;
  } else {
    switch (sc.kind) {
    case lock_kind::per_product:
      out = co_await take_product(in, sc, s, buyer, product);
      break;
    case lock_kind::single:
      out = co_await take_hot_single(in, sc, s, buyer);
      break;
    default:
      out = co_await take_hot_segment(in, sc, s, buyer);
      break;
    }
  }
  if (user_guard)
    co_await user_guard.unlock();
  switch (out) {
  case outcome::ordered: ++sc.t.ordered; break;
  case outcome::already_ordered: ++sc.t.already_ordered; break;
  case outcome::sold_out: ++sc.t.sold_out; break;
  case outcome::busy: ++sc.t.busy; break;
  case outcome::turned_away: break; // not reached: counted at the door
  }
  co_return out;
}

/// A click, or a double click (two requests at the same instant). A sale by either is the answer;
/// "try again" only when the door turned both away.
asio::awaitable<outcome> clicks(instance& in, scenario& sc, const settings& s, int user,
                                int product, bool twice) {
  using namespace asio::experimental::awaitable_operators;
  if (!twice)
    co_return co_await click(in, sc, s, user, product);
  auto [a, b] = co_await (click(in, sc, s, user, product) && click(in, sc, s, user, product));
  if (a == outcome::ordered || b == outcome::ordered)
    co_return outcome::ordered;
  if (a == outcome::already_ordered || b == outcome::already_ordered)
    co_return outcome::already_ordered;
  if (a == outcome::busy || b == outcome::busy)
    co_return outcome::busy;
  if (a == outcome::sold_out || b == outcome::sold_out)
    co_return outcome::sold_out;
  co_return outcome::turned_away;
}

/// clicks(), again after a short pause for as long as the door answers "busy, try again": the
/// buyer wants an answer from the shop, so the stock still sells out behind the door. The pause
/// is spread (1 to 2 times settings::door_pause) so that the turned-away do not come back as one
/// wave. A buyer still turned away after settings::lock_timeout gives up (the checks would then
/// find the stock unsold).
asio::awaitable<outcome> clicks_until_let_in(instance& in, scenario& sc, const settings& s,
                                             int user, int product, bool twice,
                                             std::minstd_rand& rng) {
  const auto give_up = clock::now() + s.lock_timeout;
  for (;;) {
    auto o = co_await clicks(in, sc, s, user, product, twice);
    if (o != outcome::turned_away || clock::now() >= give_up)
      co_return o;
    std::uniform_int_distribution<long> spread(s.door_pause.count(), 2 * s.door_pause.count());
    co_await pause(std::chrono::milliseconds(spread(rng)));
  }
}

struct plan {
  bool double_click = false;
  bool reclick = false; ///< clicks once more after the answer (an impatient user)
  int start = 0;        ///< part 1: the product looked at first
};

asio::awaitable<void> buyer(instance& in, scenario& sc, const settings& s, int user, plan p) {
  std::minstd_rand rng(s.seed + static_cast<unsigned>(user)); // the pauses after "try again"
  if (sc.kind != lock_kind::per_product) {
    for (int attempt = 0; attempt < 3; ++attempt) { // a timeout is retried
      auto o = co_await clicks_until_let_in(in, sc, s, user, 0, p.double_click, rng);
      if (o == outcome::busy)
        continue;
      // The click again also passes the door: it is there to meet the per-user lock.
      if (p.reclick && o != outcome::sold_out && o != outcome::turned_away)
        co_await clicks_until_let_in(in, sc, s, user, 0, false, rng);
      co_return;
    }
    co_return;
  }
  // Part 1: any product will do; look at the next one when this one is gone.
  int product = p.start;
  for (int looked = 0; looked < s.products; ++looked, product = (product + 1) % s.products) {
    if (in.product_sold_out[static_cast<std::size_t>(product)])
      continue;
    auto o = outcome::busy;
    for (int attempt = 0; attempt < 3 && o == outcome::busy; ++attempt)
      o = co_await clicks_until_let_in(in, sc, s, user, product, p.double_click, rng);
    if (o == outcome::turned_away)
      co_return; // gave up at the door
    if (o == outcome::ordered || o == outcome::already_ordered) {
      if (p.reclick)
        co_await clicks_until_let_in(in, sc, s, user, product, false, rng);
      co_return;
    }
  }
}

} // namespace

asio::awaitable<void> stock_up(corolock::redis::client& redis, const scenario& sc, const settings& s) {
  corolock::redis::request req;
  if (sc.kind == lock_kind::per_product) {
    for (int p = 0; p < s.products; ++p)
      req.push("SET", sc.k.stock(std::to_string(p)), 1);
  } else if (sc.kind == lock_kind::single) {
    req.push("SET", sc.k.stock("hot"), s.hot_stock);
  } else {
    for (int i = 0; i < s.segments; ++i) // 1000 over 20: 50 each; a remainder goes to the first
      req.push("SET", sc.k.stock(segment_item(i)),
               s.hot_stock / s.segments + (i < s.hot_stock % s.segments ? 1 : 0));
  }
  co_await redis.exec(std::move(req));
}

asio::awaitable<void> run_buyers(std::vector<std::unique_ptr<instance>>& instances, scenario& sc,
                                 const settings& s, int buyers) {
  auto ex = co_await asio::this_coro::executor;
  // The scenario's front door: one bucket in Redis, a rate_limiter object per instance (each on
  // its own client). A fresh name per scenario, so each starts with a full bucket.
  for (auto& in : instances) {
    in->door.reset();
    if (s.admit_rate > 0)
      in->door.emplace(in->redis, sc.k.scenario + ":door", s.admit_rate, s.admit_burst,
                       in->lock_opts);
  }
  std::mt19937 rng(s.seed + static_cast<unsigned>(sc.kind));
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<plan> plans(static_cast<std::size_t>(buyers));
  for (auto& p : plans) {
    p.double_click = coin(rng) < s.double_click;
    p.reclick = coin(rng) < s.reclick;
    p.start = s.products > 0 ? static_cast<int>(rng() % static_cast<unsigned>(s.products)) : 0;
    sc.t.double_clickers += p.double_click;
    sc.t.reclickers += p.reclick;
  }
  sc.t.started = sc.t.last_sale = clock::now();
  if (buyers > 0) {
    int done = 0;
    asio::steady_timer all_done(ex, clock::time_point::max());
    for (int u = 0; u < buyers; ++u) {
      auto& in = *instances[static_cast<std::size_t>(u) % instances.size()];
      asio::co_spawn(ex, buyer(in, sc, s, u, plans[static_cast<std::size_t>(u)]),
                     [&](std::exception_ptr e) {
                       if (e) {
                         if (++sc.t.errors == 1) {
                           try {
                             std::rethrow_exception(e);
                           } catch (const std::exception& x) {
                             fmt::print(stderr, "a buyer failed: {}\n", x.what());
                           }
                         }
                       }
                       if (++done == buyers)
                         all_done.cancel();
                     });
    }
    co_await all_done.async_wait(tuple_awaitable);
  }
  sc.t.finished = clock::now();
}

namespace {

/// The pairs of a HGETALL reply (a RESP3 map or a RESP2 array: both flattened).
std::vector<std::pair<std::string, std::string>> pairs_of(const corolock::resp::value& v) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i + 1 < v.children.size(); i += 2)
    out.emplace_back(v.children[i].data, v.children[i + 1].data);
  return out;
}

std::int64_t integer_of(const corolock::resp::value& v) {
  if (v.is_null())
    return 0;
  return v.type == corolock::resp::type::integer ? v.integer : std::stoll(v.data);
}

/// The products of a scenario, each with its stock keys and initial stock.
struct product_stock {
  std::string item;
  std::vector<std::string> keys;
  std::int64_t initial = 0;
};

std::vector<product_stock> products_of(const scenario& sc, const settings& s) {
  std::vector<product_stock> out;
  if (sc.kind == lock_kind::per_product) {
    for (int p = 0; p < s.products; ++p)
      out.push_back(product_stock{std::to_string(p), {sc.k.stock(std::to_string(p))}, 1});
  } else if (sc.kind == lock_kind::single) {
    out.push_back(product_stock{"hot", {sc.k.stock("hot")}, s.hot_stock});
  } else {
    product_stock hot{"hot", {}, s.hot_stock};
    for (int i = 0; i < s.segments; ++i)
      hot.keys.push_back(sc.k.stock(segment_item(i)));
    out.push_back(std::move(hot));
  }
  return out;
}

corolock::redis::request mget_request(const std::vector<product_stock>& products) {
  std::vector<std::string> all;
  for (const auto& p : products)
    all.insert(all.end(), p.keys.begin(), p.keys.end());
  corolock::redis::request r;
  r.push_range("MGET", all);
  return r;
}

} // namespace

asio::awaitable<verdict> verify(corolock::redis::client& redis, const scenario& sc, const settings& s) {
  verdict v;
  corolock::redis::request req;
  req.push("HGETALL", sc.k.orders())
      .push("HGETALL", sc.k.orders_of())
      .push("GET", sc.k.order_count())
      .push("GET", sc.k.id_clashes())
      .push("GET", sc.k.checkout_peak());
  auto r = co_await redis.exec(std::move(req));
  const auto products = products_of(sc, s);
  auto stock = co_await redis.exec(mget_request(products));

  // Orders: id -> "user|product".
  std::map<std::string, std::int64_t> sold_of, orders_per_buyer;
  for (auto& [id, buyer] : pairs_of(r.at(0))) {
    auto n = std::stoull(id);
    v.ids.push_back(n);
    if (n >> 63)
      ++v.bad_ids;
    ++orders_per_buyer[buyer];
    ++sold_of[buyer.substr(buyer.find('|') + 1)];
  }
  v.orders = static_cast<std::int64_t>(v.ids.size());
  v.order_count = integer_of(r.at(2));
  v.id_clashes = integer_of(r.at(3));
  v.checkout_peak = integer_of(r.at(4));
  if (s.checkout_slots > 0 && v.checkout_peak > s.checkout_slots)
    v.problems.push_back(fmt::format("{} orders written at once, over the {} checkout slots",
                                     v.checkout_peak, s.checkout_slots));
  // Two records of who ordered what: the per-user counters, and the orders themselves.
  std::int64_t twice_by_counter = 0, twice_by_orders = 0;
  for (auto& [buyer, n] : pairs_of(r.at(1)))
    twice_by_counter += std::stoll(n) > 1;
  for (auto& [buyer, n] : orders_per_buyer)
    twice_by_orders += n > 1;
  v.users_twice = std::max(twice_by_counter, twice_by_orders);

  // Stock: sold + remaining = initial, for every product; never below zero.
  std::size_t next = 0;
  for (const auto& p : products) {
    std::int64_t remaining = 0;
    bool negative = false;
    for (std::size_t k = 0; k < p.keys.size(); ++k) {
      auto left = integer_of(stock.at(0).children.at(next++));
      negative |= left < 0;
      remaining += left;
    }
    auto sold = sold_of.count(p.item) ? sold_of[p.item] : 0;
    v.sold += sold;
    v.remaining += remaining;
    v.initial += p.initial;
    if (negative || sold + remaining != p.initial)
      ++v.products_bad;
    if (sc.kind == lock_kind::per_product && s.buyers >= s.products && sold != 1)
      ++v.products_unsold;
  }

  if (v.products_bad)
    v.problems.push_back(fmt::format("{} products where sold + remaining != initial stock (or "
                                     "stock below zero): OVERSOLD",
                                     v.products_bad));
  if (v.products_unsold)
    v.problems.push_back(fmt::format("{} products not sold exactly once", v.products_unsold));
  if (sc.kind != lock_kind::per_product &&
      v.sold != std::min<std::int64_t>(s.hot_stock, s.hot_buyers))
    v.problems.push_back(fmt::format("sold {} of the hot product, expected {}", v.sold,
                                     std::min(s.hot_stock, s.hot_buyers)));
  if (v.orders != v.order_count || v.id_clashes)
    v.problems.push_back(fmt::format("{} orders recorded but {} stored: an order id was reused",
                                     v.order_count, v.orders));
  if (v.bad_ids)
    v.problems.push_back(fmt::format("{} order ids with the sign bit set", v.bad_ids));
  if (v.users_twice)
    v.problems.push_back(fmt::format("{} users with two orders of the same product",
                                     v.users_twice));
  if (sc.t.ordered != v.orders)
    v.problems.push_back(fmt::format("buyers were told of {} orders, Redis holds {}",
                                     sc.t.ordered, v.orders));
  if (sc.t.errors)
    v.problems.push_back(fmt::format("{} buyers failed with an error", sc.t.errors));
  // The front door: the bucket's promise, over the span in which every take happened. Redis
  // counts on its own clock; a private server on this host runs with our steady clock, save a
  // step of the wall clock during the run.
  if (s.admit_rate > 0) {
    v.door_bound = s.admit_rate * sc.t.admitting_seconds() + s.admit_burst;
    if (sc.t.admitted > v.door_bound)
      v.problems.push_back(fmt::format("the front door let in {} clicks in {:.3f} s, over its "
                                       "{:g}/s × {:.3f} s + {} = {:.0f}",
                                       sc.t.admitted, sc.t.admitting_seconds(), s.admit_rate,
                                       sc.t.admitting_seconds(), s.admit_burst, v.door_bound));
  }
  co_return v;
}

asio::awaitable<std::size_t> clean_up(corolock::redis::client& redis, const std::string& base) {
  std::size_t deleted = 0;
  std::string cursor = "0";
  for (int round = 0; round < 100'000; ++round) { // bounded: a SCAN pass ends long before
    auto page = co_await redis.exec(cmd("SCAN", cursor, "MATCH", base + "*", "COUNT", 1000));
    const auto& reply = page.at(0);
    if (reply.children.size() != 2)
      break;
    cursor = reply.children[0].data;
    std::vector<std::string> found;
    for (const auto& key : reply.children[1].children)
      found.push_back(key.data);
    if (!found.empty()) {
      corolock::redis::request del;
      del.push_range("UNLINK", found);
      co_await redis.exec(std::move(del));
      deleted += found.size();
    }
    if (cursor == "0")
      break;
  }
  co_return deleted;
}

} // namespace flash
