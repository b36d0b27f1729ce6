// flash_sale: the flash-sale ("seckill") order flow of the seeds on corolock, checked end to end.
//
//   1. 5 000 products with stock 1, 5 000 buyers at once: each product sold exactly once.
//   2. One hot product, stock 1 000, 5 000 buyers: under one lock, then with the stock split over
//      20 segments (corolock::segmented_lock) — the throughputs side by side.
//   Every buyer may double-click or click again; a per-user lock keeps it to one order per user
//   and product. Order ids come from corolock::redis::id_generator. In front of it all, a front
//   door (corolock::rate_limiter, one bucket per scenario shared by every instance) lets in at most
//   --admit-rate clicks a second after a burst of --admit-burst; the others are answered "busy,
//   try again" at once and the buyer clicks again after a short pause. At the end the numbers are
//   checked from Redis, and the door's admissions against rate × elapsed + burst on the run's own
//   clock; any violation makes the exit status 1.
//
//   flash_sale [REDIS_URL] [--small] [--redis-url URL] [--products N] [--buyers N] [--hot-stock N]
//              [--hot-buyers N] [--segments K] [--instances N] [--work-ms X] [--seed S]
//              [--checkout-slots N] [--admit-rate N (0: no door)] [--admit-burst M]
//              [--without-user-lock]
//
// The URL comes first or after --redis-url, else from $REDIS_URL, else redis://127.0.0.1:6379.
// scripts/with_redis.sh starts a private redis-server and passes its URL first.
#include "shop.hpp"

#include <fmt/chrono.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <random>

namespace asio = boost::asio;
using namespace flash;

namespace {

struct cli {
  settings s;
  std::string url;
  bool ok = true;
};

cli parse(int argc, char** argv) {
  cli out;
  std::random_device rd;
  out.s.seed = rd();
  if (const char* env = std::getenv("REDIS_URL"))
    out.url = env;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        out.ok = false;
        return "0";
      }
      return args[++i];
    };
    try {
      if (a == "--small") {
        out.s.products = 500;
        out.s.buyers = 500;
        out.s.hot_stock = 200;
        out.s.hot_buyers = 600;
        out.s.segments = 10;
        out.s.instances = 2;
      } else if (a == "--redis-url") {
        out.url = value();
      } else if (i == 0 && a.find("://") != std::string::npos) {
        out.url = a;
      } else if (a == "--products") {
        out.s.products = std::stoi(value());
      } else if (a == "--buyers") {
        out.s.buyers = std::stoi(value());
      } else if (a == "--hot-stock") {
        out.s.hot_stock = std::stoi(value());
      } else if (a == "--hot-buyers") {
        out.s.hot_buyers = std::stoi(value());
      } else if (a == "--segments") {
        out.s.segments = std::stoi(value());
      } else if (a == "--instances") {
        out.s.instances = std::stoi(value());
      } else if (a == "--work-ms") {
        out.s.work = std::chrono::microseconds(static_cast<long>(std::stod(value()) * 1000));
      } else if (a == "--seed") {
        out.s.seed = static_cast<unsigned>(std::stoul(value()));
      } else if (a == "--checkout-slots") {
        out.s.checkout_slots = std::stoi(value());
      } else if (a == "--admit-rate") {
        out.s.admit_rate = std::stod(value());
      } else if (a == "--admit-burst") {
        out.s.admit_burst = std::stoi(value());
      } else if (a == "--without-user-lock") {
        out.s.user_lock = false;
      } else {
        out.ok = false;
      }
    } catch (const std::exception&) {
      out.ok = false;
    }
  }
  const auto& s = out.s;
  if (s.products < 0 || s.buyers < 0 || s.hot_stock < 0 || s.hot_buyers < 0 || s.segments < 1 ||
      s.segments > static_cast<int>(corolock::segmented_lock::max_segments) || s.instances < 1 ||
      s.instances > 64 || s.work.count() < 0 || s.checkout_slots < 0)
    out.ok = false;
  // (the negated test also refuses a rate that is not a number)
  if (!(s.admit_rate >= 0 && s.admit_rate <= corolock::rate_limiter::max_rate) ||
      (s.admit_rate > 0 && s.admit_burst < 1))
    out.ok = false;
  return out;
}

std::string run_id() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

double per_second(double n, double seconds) { return seconds > 0 ? n / seconds : 0; }

void print_tally(const tally& t, const settings& s) {
  fmt::print("    clicks {} ({} buyers double-clicked, {} clicked again): {}{} ordered, {} turned "
             "away as already ordered, {} sold out, {} timed out{}\n",
             t.clicks, t.double_clickers, t.reclickers,
             s.admit_rate > 0 ? fmt::format("{} turned away at the door ('busy, try again'), ",
                                            t.turned_away)
                              : std::string(),
             t.ordered, t.already_ordered, t.sold_out, t.busy,
             t.errors ? fmt::format(", {} ERRORS", t.errors) : std::string());
}

/// What the front door does, for the run's heading.
std::string front_door_text(const settings& s) {
  if (s.admit_rate <= 0)
    return "no front door (--admit-rate 0) -> order";
  return fmt::format("front door (a rate limiter over every instance: {:g} clicks/s, bursts of {}; "
                     "no token: 'busy, try again', the buyer clicks again {}-{} ms later) -> order",
                     s.admit_rate, s.admit_burst, s.door_pause.count(), 2 * s.door_pause.count());
}

scenario make_scenario(lock_kind kind, const std::string& base, const std::string& name,
                       int stock) {
  scenario sc;
  sc.kind = kind;
  sc.k.base = base;
  sc.k.scenario = name;
  sc.stock_total = stock;
  return sc;
}

/// Checks one part from Redis and prints the verdict; collects its order ids.
asio::awaitable<bool> check_part(corolock::redis::client& redis, std::string label, const scenario& sc,
                                 const settings& s, std::vector<std::uint64_t>& all_ids) {
  auto v = co_await verify(redis, sc, s);
  fmt::print("    {:<16} sold {} + remaining {} = {} (initial {}); orders {}; users with two "
             "orders of one product: {}; most orders written at once: {} (slots {}); {}\n",
             label, v.sold, v.remaining, v.sold + v.remaining, v.initial, v.orders, v.users_twice,
             v.checkout_peak, s.checkout_slots, v.ok() ? "OK" : "VIOLATED");
  if (s.admit_rate > 0)
    fmt::print("    {:<16} front door: {} clicks let in, {} turned away; by the run's clock, let in "
               "within {:.3f} s: at most {:g}/s × {:.3f} s + {} = {:.0f}, {}\n",
               "", sc.t.admitted, sc.t.turned_away, sc.t.admitting_seconds(), s.admit_rate,
               sc.t.admitting_seconds(), s.admit_burst, v.door_bound,
               sc.t.admitted <= v.door_bound ? "OK" : "EXCEEDED");
  for (const auto& p : v.problems)
    fmt::print("      !! {}\n", p);
  all_ids.insert(all_ids.end(), v.ids.begin(), v.ids.end());
  co_return v.ok();
}

asio::awaitable<int> sale(std::string url, settings s) {
  auto ex = co_await asio::this_coro::executor;
  auto cfg = corolock::redis::client_config::from_url(url);
  const std::string base = "flash:" + run_id() + ":";
  std::vector<std::unique_ptr<instance>> instances;
  for (int i = 0; i < s.instances; ++i) {
    instances.push_back(std::make_unique<instance>(ex, cfg));
    auto& in = *instances.back();
    co_await in.redis.connect();
    in.lock_opts.prefix = base + "lock:"; // every lock key of this run, for the clean-up
    corolock::redis::id_generator_options ido;
    ido.prefix = "flash:"; // the day counters outlive the run: ids stay unique across runs
    in.ids.emplace(in.redis, "orders", ido);
  }
  auto& redis = instances.front()->redis;
  fmt::print("flash_sale: {}, keys under '{}', {} app instances, seed {}\n", url, base,
             s.instances, s.seed);
  fmt::print("  every click: {}\n", front_door_text(s));
  fmt::print("  every order: per-user lock -> stock lock -> GET, DECR -> checkout slot (a semaphore "
             "of {}) -> order id, HSETNX/HINCRBY, {:.1f} ms 'database write' -> release\n{}",
             s.checkout_slots, s.work.count() / 1000.0,
             s.user_lock ? "" : "  WITHOUT the per-user lock: expect users with two orders\n");

  // Part 1: many products, one unit each.
  auto p1 = make_scenario(lock_kind::per_product, base, "p1", s.products);
  for (auto& in : instances)
    in->product_sold_out.assign(static_cast<std::size_t>(s.products), 0);
  co_await stock_up(redis, p1, s);
  co_await run_buyers(instances, p1, s, s.buyers);
  fmt::print("\n[1] {} products with stock 1, {} buyers arriving at once, one lock per product\n",
             s.products, s.buyers);
  fmt::print("    {} orders in {:.3f} s ({:.0f} orders/s)\n", p1.t.ordered, p1.t.total_seconds(),
             per_second(p1.t.ordered, p1.t.total_seconds()));
  print_tally(p1.t, s);

  // Part 2: one hot product under one lock ...
  auto single = make_scenario(lock_kind::single, base, "single", s.hot_stock);
  for (auto& in : instances) {
    in->hot.emplace(in->redis, "single:hot", in->lock_opts);
    in->sold_out.emplace(ex, clock::time_point::max());
  }
  co_await stock_up(redis, single, s);
  co_await run_buyers(instances, single, s, s.hot_buyers);
  // ... and in segments.
  auto seg = make_scenario(lock_kind::segmented, base, "seg", s.hot_stock);
  for (auto& in : instances) {
    corolock::segmented_lock_options so;
    so.lock = in->lock_opts;
    in->hot_segments.emplace(in->redis, "seg:hot", static_cast<std::size_t>(s.segments), so);
  }
  co_await stock_up(redis, seg, s);
  co_await run_buyers(instances, seg, s, s.hot_buyers);

  fmt::print("\n[2] one hot product, stock {}, {} buyers arriving at once\n", s.hot_stock,
             s.hot_buyers);
  fmt::print("    {:<28}{:>16}{:>16}\n", "", "single lock", fmt::format("{} segments", s.segments));
  fmt::print("    {:<28}{:>16}{:>16}\n", "units sold", single.t.ordered, seg.t.ordered);
  fmt::print("    {:<28}{:>14.3f} s{:>14.3f} s\n", "time to sell out", single.t.sell_seconds(),
             seg.t.sell_seconds());
  const double single_rate = per_second(single.t.ordered, single.t.sell_seconds());
  const double seg_rate = per_second(seg.t.ordered, seg.t.sell_seconds());
  fmt::print("    {:<28}{:>16.0f}{:>16.0f}\n", "orders / s", single_rate, seg_rate);
  fmt::print("    {:<28}{:>14.3f} s{:>14.3f} s\n", "  first sale after", single.t.first_sale_seconds(),
             seg.t.first_sale_seconds());
  fmt::print("    {:<28}{:>16.0f}{:>16.0f}\n", "  orders / s from then on", single.t.selling_rate(),
             seg.t.selling_rate());
  fmt::print("    {:<28}{:>14.3f} s{:>14.3f} s\n", "every buyer answered", single.t.total_seconds(),
             seg.t.total_seconds());
  fmt::print("    segments vs single lock: {:.1f}x the throughput\n",
             single_rate > 0 ? seg_rate / single_rate : 0.0);
  fmt::print("    single lock:");
  print_tally(single.t, s);
  fmt::print("    segments:   ");
  print_tally(seg.t, s);

  // The checks, from Redis.
  fmt::print("\n[3] checks, from Redis\n");
  bool ok = true;
  std::vector<std::uint64_t> all_ids;
  ok &= co_await check_part(redis, "[1] products", p1, s, all_ids);
  ok &= co_await check_part(redis, "[2] single lock", single, s, all_ids);
  ok &= co_await check_part(redis, "[2] segments", seg, s, all_ids);
  std::sort(all_ids.begin(), all_ids.end());
  const bool ids_unique = std::adjacent_find(all_ids.begin(), all_ids.end()) == all_ids.end();
  fmt::print("    order ids: {} in all, {}\n", all_ids.size(),
             ids_unique ? "no duplicates" : "DUPLICATES");
  ok &= ids_unique;
  if (!all_ids.empty()) {
    auto& gen = *instances.front()->ids;
    auto show = [&](std::uint64_t id) {
      fmt::print("      e.g. {} = issued {:%Y-%m-%d %H:%M:%S} UTC, #{} of the day\n", id,
                 gen.time_of(id), corolock::redis::id_generator::sequence_of(id));
    };
    show(all_ids.front());
    show(all_ids.back());
  }

  if (ok) {
    auto n = co_await clean_up(redis, base);
    fmt::print("\nRESULT: OK — nothing oversold, every order id unique, one order per user and "
               "product{} ({} keys of the run removed)\n",
               s.admit_rate > 0 ? ", never more let in than the front door's rate and burst" : "",
               n);
  } else {
    fmt::print("\nRESULT: VIOLATIONS (the run's keys are left under '{}' for inspection)\n", base);
  }
  for (auto& in : instances)
    in->redis.close();
  co_return ok ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  auto args = parse(argc, argv);
  if (!args.ok) {
    fmt::print(stderr,
               "usage: flash_sale [REDIS_URL] [--small] [--redis-url URL] [--products N] [--buyers N] "
               "[--hot-stock N] [--hot-buyers N] [--segments K (1..4096)] [--instances N (1..64)] "
               "[--work-ms X] [--seed S] [--checkout-slots N] [--admit-rate N (0: no door)] "
               "[--admit-burst M (1..)] [--without-user-lock]\n");
    return 2;
  }
  try {
    if (args.url.empty())
      args.url = "redis://127.0.0.1:6379";
    asio::io_context io;
    int status = 1;
    asio::co_spawn(io, sale(args.url, args.s),
                   [&](std::exception_ptr e, int rc) {
                     status = rc;
                     if (e) {
                       status = 1;
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& x) {
                         fmt::print(stderr, "flash_sale failed: {}\n", x.what());
                       }
                     }
                     io.stop(); // the clients' background work is not ours to wait for
                   });
    io.run();
    return status;
  } catch (const std::exception& e) {
    fmt::print(stderr, "flash_sale: {}\n", e.what());
    return 1;
  }
}
