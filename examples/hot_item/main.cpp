// hot_item: one item everybody wants, its stock split into 4 segments of 5, each behind its own
// lock, so 4 buyers can take stock at once instead of queueing on one lock (the seeds' segmented
// lock). acquire_any hands out a free segment that still has stock; a buyer who empties a segment
// marks it empty, and once all are marked acquire_any says error::exhausted: sold out.
//
//   hot_item redis://127.0.0.1:6379          (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <iostream>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;

constexpr std::size_t segments = 4;
constexpr int stock_per_segment = 5;

std::string stock_key(std::size_t segment) { return "hot_item:stock:" + std::to_string(segment); }

// Returns true if the buyer got one, false if the item is sold out.
asio::awaitable<bool> buy(corolock::redis::client& redis, corolock::segmented_lock& item) {
  for (;;) {
    auto [ec, sg] = co_await item.acquire_any(asio::as_tuple(asio::use_awaitable));
    if (ec == corolock::error::exhausted)
      co_return false;
    if (ec)
      throw boost::system::system_error(ec);
    corolock::redis::request get;
    get.push("GET", stock_key(sg.index()));
    auto left = std::stoi((co_await redis.exec(std::move(get)))[0].data);
    if (left == 0) { // another process emptied it before we saw the mark
      co_await item.mark_empty(sg.index());
      co_await sg.unlock();
      continue;
    }
    corolock::redis::request take; // safe: nobody else holds this segment's lock
    take.push("SET", stock_key(sg.index()), left - 1);
    co_await redis.exec(std::move(take));
    if (left == 1)
      co_await item.mark_empty(sg.index());
    co_await sg.unlock();
    co_return true;
  }
}

asio::awaitable<void> run(corolock::redis::client& redis, int& sold, int& turned_away) {
  co_await redis.connect();
  corolock::segmented_lock item{redis, "hot-item", segments};
  co_await item.reset(); // a fresh sale
  corolock::redis::request fill;
  for (std::size_t s = 0; s < segments; ++s)
    fill.push("SET", stock_key(s), stock_per_segment);
  co_await redis.exec(std::move(fill));

  auto buyer = [&]() -> asio::awaitable<void> {
    if (co_await buy(redis, item))
      ++sold;
    else
      ++turned_away;
  };
  auto ex = co_await asio::this_coro::executor;
  int finished = 0, failed_buyers = 0;
  asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
  for (int b = 0; b < 30; ++b) // 30 buyers for 20 items
    asio::co_spawn(ex, buyer(), [&](std::exception_ptr e) {
      failed_buyers += e ? 1 : 0;
      if (++finished == 30)
        all_done.cancel();
    });
  co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
  co_await item.reset();
  corolock::redis::request del;
  for (std::size_t s = 0; s < segments; ++s)
    del.push("DEL", stock_key(s));
  co_await redis.exec(std::move(del));
  if (failed_buyers > 0)
    throw std::runtime_error(std::to_string(failed_buyers) + " buyers failed");
}

int main(int argc, char** argv) {
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  int sold = 0, turned_away = 0;
  bool failed = false;
  asio::co_spawn(io, run(redis, sold, turned_away), [&](std::exception_ptr e) {
    if (e) {
      failed = true;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::cerr << "hot_item: " << ex.what() << '\n';
      }
    }
    redis.close();
  });
  io.run();
  std::cout << sold << " sold, " << turned_away << " turned away (stock "
            << segments * stock_per_segment << ")\n";
  return !failed && sold == int(segments) * stock_per_segment && turned_away == 10 ? 0 : 1;
}
