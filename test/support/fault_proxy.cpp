// The fault proxy: one io_context on one thread. Each connection runs four coroutines, a reader and a
// writer per direction; readers queue what they read, writers decide from the current faults when
// (and whether) to write it. Every piece of state is touched only on the proxy's thread.
#include "fault_proxy.hpp"

#include <boost/asio.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <deque>
#include <exception>
#include <future>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace corolock::test {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;
using error_code = boost::system::error_code;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

constexpr std::size_t read_size = 64 * 1024;
/// A direction stops reading while it holds this much: the sender then meets a full TCP window.
constexpr std::size_t max_held = 16 * 1024 * 1024;

/// Direction indices: 0 client to server, 1 server to client.
constexpr int c2s = 0, s2c = 1;

bool applies(direction dir, int index) { return (static_cast<int>(dir) & (1 << index)) != 0; }

struct faults {
  fault_proxy::duration delay{};
  bool blackhole = false;
  std::uint64_t drop_after = fault_proxy::never;
  std::size_t fragment = 0;
  fault_proxy::duration gap{};
};

struct chunk {
  std::vector<char> bytes;
  std::size_t offset = 0;  ///< written so far
  steady::time_point read_at;

  std::size_t left() const noexcept { return bytes.size() - offset; }
};

/// One direction of one connection.
struct lane {
  explicit lane(const asio::any_io_executor& ex) : wake(ex), room(ex), gap(ex) {}

  std::deque<chunk> held;
  std::size_t held_bytes = 0;       ///< held plus the unwritten rest of the chunk being written
  std::uint64_t budget = fault_proxy::never;  ///< bytes to write before the reset (drop_after)
  std::uint64_t budget_version = 0; ///< bumped when drop_after sets a new budget
  std::uint64_t discards = 0;       ///< bumped by discard(): the chunk being written is dropped too
  bool eof = false;                 ///< the source closed; shut the sink down once drained
  asio::steady_timer wake;          ///< the writer sleeps on it (as a condition variable)
  asio::steady_timer room;          ///< the reader sleeps on it while max_held is reached
  asio::steady_timer gap;           ///< the writer's pause between fragments
  std::array<char, read_size> buffer{};
};

struct connection {
  explicit connection(asio::io_context& io, tcp::socket accepted)
      : client(std::move(accepted)), server(io),
        lanes{lane(io.get_executor()), lane(io.get_executor())} {}

  tcp::socket& source(int i) { return i == c2s ? client : server; }
  tcp::socket& sink(int i) { return i == c2s ? server : client; }

  tcp::socket client, server;
  std::array<lane, 2> lanes;
  bool closed = false;
  int running = 0;  ///< coroutines still running
};

void hard_close(tcp::socket& s) {
  error_code ignored;
  if (s.is_open()) {
    s.set_option(asio::socket_base::linger(true, 0), ignored);
    s.close(ignored);
  }
}

void report(std::exception_ptr e) {
  if (!e)
    return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    fmt::print(stderr, "fault_proxy: {}\n", ex.what());
  }
}

asio::awaitable<void> sleep_on(asio::steady_timer& timer, steady::time_point until) {
  timer.expires_at(until);
  co_await timer.async_wait(tuple_awaitable);  // cancelled: woken early, the caller looks again
}

} // namespace

class fault_proxy::impl {
public:
  explicit impl(std::uint16_t target_port)
      : target_(asio::ip::make_address_v4("127.0.0.1"), target_port),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), 0)),
        port_(acceptor_.local_endpoint().port()) {
    asio::co_spawn(io_, accept_loop(), report);
    thread_ = std::thread([this] {
      io_.run();
      finished_.set_value();
    });
  }

  ~impl() {
    asio::post(io_, [this] {
      stopping_ = true;
      error_code ignored;
      acceptor_.close(ignored);
      for (const auto& c : snapshot())
        reset(*c);
    });
    work_.reset();
    // Everything was closed, so every coroutine ends promptly; the bound is a safety net.
    if (finished_.get_future().wait_for(std::chrono::seconds(5)) != std::future_status::ready)
      io_.stop();
    thread_.join();
  }

  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  std::uint16_t port() const noexcept { return port_; }

  /// Runs `f` on the proxy's thread and returns its result once it has run.
  template <typename F>
  auto on_proxy_thread(F f) {
    using result = decltype(f());
    // The handler owns the promise: the caller may return from get() while set_value is still
    // finishing on the proxy's thread.
    auto done = std::make_shared<std::promise<result>>();
    auto future = done->get_future();
    asio::post(io_, [&f, done] {
      try {
        if constexpr (std::is_void_v<result>) {
          f();
          done->set_value();
        } else {
          done->set_value(f());
        }
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    });
    return future.get();
  }

  // The controls; on the proxy's thread.

  void set_delay(direction dir, duration d) {
    for_each(dir, [&](int i) { faults_[i].delay = d; });
  }
  void set_blackhole(direction dir, bool on) {
    for_each(dir, [&](int i) { faults_[i].blackhole = on; });
  }
  void set_fragment(direction dir, std::size_t max_bytes, duration gap) {
    for_each(dir, [&](int i) {
      faults_[i].fragment = max_bytes;
      faults_[i].gap = gap;
    });
  }

  void discard(direction dir) {
    for (const auto& c : connections_)
      for (int i : {c2s, s2c})
        if (applies(dir, i)) {
          auto& p = c->lanes[i];
          for (const auto& ch : p.held)
            p.held_bytes -= ch.left();
          p.held.clear();
          ++p.discards;
          p.room.cancel();
        }
  }

  void drop_after(direction dir, std::uint64_t bytes) {
    for_each(dir, [&](int i) {
      faults_[i].drop_after = bytes;
      for (const auto& c : connections_) {
        c->lanes[i].budget = bytes;
        ++c->lanes[i].budget_version;
      }
    });
    if (bytes == 0)
      for (const auto& c : snapshot())
        reset(*c);
  }

  void reset_all() {
    for (const auto& c : snapshot())
      reset(*c);
  }

  void refuse(bool on) { refusing_ = on; }

  void heal() {
    refusing_ = false;
    faults_ = {};
    for (const auto& c : connections_)
      for (auto& p : c->lanes) {
        p.budget = never;
        ++p.budget_version;
        p.wake.cancel();
      }
  }

  fault_proxy_stats stats() const {
    fault_proxy_stats s;
    s.accepted = accepted_;
    s.refused = refused_;
    s.live = connections_.size();
    s.resets = resets_;
    s.bytes_client_to_server = written_[c2s];
    s.bytes_server_to_client = written_[s2c];
    for (const auto& c : connections_) {
      s.held_client_to_server += c->lanes[c2s].held_bytes;
      s.held_server_to_client += c->lanes[s2c].held_bytes;
    }
    return s;
  }

private:
  /// Sets a fault for the directions `dir` names, then wakes those writers to look at it.
  template <typename F>
  void for_each(direction dir, F set) {
    for (int i : {c2s, s2c})
      if (applies(dir, i)) {
        set(i);
        for (const auto& c : connections_)
          c->lanes[i].wake.cancel();
      }
  }

  std::vector<std::shared_ptr<connection>> snapshot() const {
    return {connections_.begin(), connections_.end()};
  }

  void reset(connection& c) {
    if (c.closed)
      return;
    c.closed = true;
    ++resets_;
    hard_close(c.client);
    hard_close(c.server);
    for (auto& p : c.lanes) {
      p.held.clear();
      p.held_bytes = 0;
      p.wake.cancel();
      p.room.cancel();
      p.gap.cancel();
    }
  }

  asio::awaitable<void> accept_loop() {
    asio::steady_timer backoff(io_);
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(tuple_awaitable);
      if (stopping_)
        co_return;
      if (ec) {  // out of descriptors, say: try again a little later
        co_await sleep_on(backoff, steady::now() + std::chrono::milliseconds(10));
        continue;
      }
      ++accepted_;
      if (refusing_) {
        ++refused_;
        ++resets_;
        hard_close(socket);
        continue;
      }
      auto c = std::make_shared<connection>(io_, std::move(socket));
      connections_.insert(c);
      asio::co_spawn(io_, serve(c), report);
    }
  }

  asio::awaitable<void> serve(std::shared_ptr<connection> c) {
    auto [ec] = co_await c->server.async_connect(target_, tuple_awaitable);
    if (ec)
      reset(*c);  // nothing behind the proxy: the client sees a reset
    if (!c->closed) {
      c->client.set_option(tcp::no_delay(true), ec);
      c->server.set_option(tcp::no_delay(true), ec);
      for (int i : {c2s, s2c})
        c->lanes[i].budget = faults_[i].drop_after;
      if (faults_[c2s].drop_after == 0 || faults_[s2c].drop_after == 0)
        reset(*c);
    }
    if (c->closed) {
      connections_.erase(c);
      co_return;
    }
    c->running = 4;
    auto ended = [this, c](std::exception_ptr e) {
      report(e);
      if (--c->running == 0)
        finish(c);
    };
    for (int i : {c2s, s2c}) {
      asio::co_spawn(io_, read_side(c, i), ended);
      asio::co_spawn(io_, write_side(c, i), ended);
    }
  }

  void finish(const std::shared_ptr<connection>& c) {
    error_code ignored;
    c->client.close(ignored);  // both directions ended gracefully, or were reset already
    c->server.close(ignored);
    c->closed = true;
    connections_.erase(c);
  }

  asio::awaitable<void> read_side(std::shared_ptr<connection> c, int i) {
    auto& p = c->lanes[i];
    for (;;) {
      while (!c->closed && p.held_bytes >= max_held)
        co_await sleep_on(p.room, steady::time_point::max());
      if (c->closed)
        co_return;
      auto [ec, n] = co_await c->source(i).async_read_some(asio::buffer(p.buffer), tuple_awaitable);
      if (c->closed)
        co_return;
      if (ec == asio::error::eof) {
        p.eof = true;
        p.wake.cancel();
        co_return;
      }
      if (ec) {  // reset by the peer, or failed: the other side learns it as a reset too
        reset(*c);
        co_return;
      }
      p.held.push_back(chunk{{p.buffer.begin(), p.buffer.begin() + static_cast<std::ptrdiff_t>(n)},
                             0, steady::now()});
      p.held_bytes += n;
      p.wake.cancel();
    }
  }

  asio::awaitable<void> write_side(std::shared_ptr<connection> c, int i) {
    auto& p = c->lanes[i];
    const faults& f = faults_[i];  // read afresh after every suspension
    for (;;) {
      if (c->closed)
        co_return;
      if (p.held.empty() && p.eof) {
        error_code ignored;
        c->sink(i).shutdown(tcp::socket::shutdown_send, ignored);
        co_return;
      }
      if (p.held.empty() || f.blackhole) {
        co_await sleep_on(p.wake, steady::time_point::max());
        continue;
      }
      if (auto due = p.held.front().read_at + f.delay; steady::now() < due) {
        co_await sleep_on(p.wake, due);
        continue;
      }
      // The chunk leaves the queue while it is written, so that discard() cannot free its bytes.
      chunk current = std::move(p.held.front());
      p.held.pop_front();
      std::size_t n = current.left();
      if (f.fragment != 0)
        n = std::min(n, f.fragment);
      if (p.budget != never)
        n = static_cast<std::size_t>(std::min<std::uint64_t>(n, p.budget));
      const auto budget_version = p.budget_version;
      const auto discards = p.discards;
      auto [ec, written] = co_await asio::async_write(
          c->sink(i), asio::buffer(current.bytes.data() + current.offset, n), tuple_awaitable);
      if (c->closed)
        co_return;
      if (ec) {
        reset(*c);
        co_return;
      }
      current.offset += written;
      written_[i] += written;
      p.held_bytes -= written;
      if (p.budget != never && p.budget_version == budget_version)
        p.budget -= written;
      if (current.left() != 0) {
        if (p.discards == discards)
          p.held.push_front(std::move(current));
        else
          p.held_bytes -= current.left();
      }
      p.room.cancel();
      if (p.budget == 0) {
        reset(*c);
        co_return;
      }
      if (f.fragment != 0 && f.gap > duration::zero() && !p.held.empty())
        co_await sleep_on(p.gap, steady::now() + f.gap);
    }
  }

  // Declared first, destroyed last: the sockets and timers below belong to it.
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{io_.get_executor()};
  tcp::endpoint target_;
  tcp::acceptor acceptor_;
  std::uint16_t port_;
  std::array<faults, 2> faults_{};
  bool refusing_ = false;
  bool stopping_ = false;
  std::set<std::shared_ptr<connection>> connections_;
  std::uint64_t accepted_ = 0, refused_ = 0, resets_ = 0;
  std::array<std::uint64_t, 2> written_{};
  std::promise<void> finished_;
  std::thread thread_;
};

fault_proxy::fault_proxy(std::uint16_t target_port) : impl_(std::make_unique<impl>(target_port)) {}

fault_proxy::~fault_proxy() = default;

std::uint16_t fault_proxy::port() const noexcept { return impl_->port(); }

std::string fault_proxy::url(std::string_view password) const {
  if (password.empty())
    return fmt::format("redis://127.0.0.1:{}", port());
  return fmt::format("redis://:{}@127.0.0.1:{}", password, port());
}

void fault_proxy::delay(direction dir, duration d) {
  impl_->on_proxy_thread([&] { impl_->set_delay(dir, d); });
}

void fault_proxy::blackhole(direction dir, bool on) {
  impl_->on_proxy_thread([&] { impl_->set_blackhole(dir, on); });
}

void fault_proxy::discard(direction dir) {
  impl_->on_proxy_thread([&] { impl_->discard(dir); });
}

void fault_proxy::drop_after(direction dir, std::uint64_t bytes) {
  impl_->on_proxy_thread([&] { impl_->drop_after(dir, bytes); });
}

void fault_proxy::fragment(direction dir, std::size_t max_bytes, duration gap) {
  impl_->on_proxy_thread([&] { impl_->set_fragment(dir, max_bytes, gap); });
}

void fault_proxy::reset_all() {
  impl_->on_proxy_thread([&] { impl_->reset_all(); });
}

void fault_proxy::refuse(bool on) {
  impl_->on_proxy_thread([&] { impl_->refuse(on); });
}

void fault_proxy::heal() {
  impl_->on_proxy_thread([&] { impl_->heal(); });
}

fault_proxy_stats fault_proxy::stats() const {
  return impl_->on_proxy_thread([&] { return impl_->stats(); });
}

} // namespace corolock::test
