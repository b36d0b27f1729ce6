// A separate process for the multi-process ID generator test:
//   id_worker URL NAME COUNT OUTFILE single|batch
// takes COUNT ids from the generator NAME — one next() at a time from 32 concurrent coroutines,
// or in next_batch() calls of up to 1000 — and writes them to OUTFILE as raw 64-bit integers.
#include <corolock/corolock.hpp>
#include <support/run_with_client.hpp>

#include <boost/asio.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <vector>

namespace asio = boost::asio;

namespace {

asio::awaitable<void> take_singly(corolock::redis::id_generator& gen, std::vector<std::uint64_t>& out,
                                  std::size_t count) {
  while (out.size() < count) {
    auto id = co_await gen.next();
    if (out.size() < count) // the others may have filled it meanwhile
      out.push_back(id);
  }
}

asio::awaitable<int> run(corolock::redis::client& redis, std::string name, std::size_t count,
                         std::string path, bool batch) {
  co_await redis.connect();
  corolock::redis::id_generator gen(redis, name);
  std::vector<std::uint64_t> ids;
  ids.reserve(count);
  if (batch) {
    while (ids.size() < count) {
      auto n = static_cast<std::uint32_t>(std::min<std::size_t>(1000, count - ids.size()));
      auto got = co_await gen.next_batch(n);
      ids.insert(ids.end(), got.begin(), got.end());
    }
  } else {
    auto ex = co_await asio::this_coro::executor;
    int running = 32, failed = 0;
    asio::steady_timer done(ex, asio::steady_timer::time_point::max());
    for (int k = 0; k < 32; ++k)
      asio::co_spawn(ex, take_singly(gen, ids, count), [&](std::exception_ptr e) {
        if (e)
          ++failed;
        if (--running == 0)
          done.cancel();
      });
    co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
    if (failed)
      co_return 1;
  }
  redis.close();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file || std::fwrite(ids.data(), sizeof(std::uint64_t), ids.size(), file.get()) != ids.size())
    co_return 1;
  co_return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() != 5 || (args[4] != "single" && args[4] != "batch")) {
    fmt::print(stderr, "usage: id_worker URL NAME COUNT OUTFILE single|batch\n");
    return 2;
  }
  return corolock::test::with_client(args[0], "id_worker", [&](corolock::redis::client& redis) {
    return run(redis, args[1], std::stoul(args[2]), args[3], args[4] == "batch");
  });
}
