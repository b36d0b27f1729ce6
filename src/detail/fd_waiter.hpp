// Private: waits through Asio's reactor for a socket that a C client library owns (libmariadb,
// libpq) to become readable or writable, or for the library's own timeout.
//
// The library creates, reads, writes and closes its descriptor, at moments we do not choose (a
// lost connection is closed inside the call that met it). Asio must never hold a registration for
// a number the library closed: a reused number would be watched as the old socket, and a later
// deregistration would remove a stranger's. So the waiter watches its own duplicate (dup), which
// it closes itself: the library's close cannot pull it away. The duplicate keeps the socket open,
// so it is closed (release()) as soon as the library is done with the connection.
//
// A wake-up may be spurious (the reactor may report readiness speculatively); the libraries'
// non-blocking calls absorb that (they meet EAGAIN and ask to wait again). One wait at a time.
// Between the library's calls, watch_idle() waits for the socket to turn readable (the server
// closed it or spoke unasked); wait() ends that watch first.
//
// One read wait serves both: the idle watch's pending wait is handed over to the wait() that
// follows (and back to a watch_idle() that comes before it completed), instead of being cancelled
// and armed anew. Asio's epoll reactor re-arms the descriptor (EPOLL_CTL_MOD, a system call) for
// every wait it queues; an uncontended statement thus costs one instead of two. What a pending
// read wait serves (read_watch) lives with its handler, so whoever it serves when it completes
// is told: the idle watch (input()), the wait (woke()), or nobody (unwatch_idle() came first, or
// the descriptor was released: then its completion is dropped, and the next wait arms afresh, the
// reactor reporting the readiness that is already there). The handler reaches this waiter only
// through its owner: held strongly while it serves a wait, weakly otherwise.
#pragma once

#include <fcntl.h>

#include <corolock/detail/async.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

namespace corolock::detail {

class fd_waiter {
public:
  static constexpr unsigned readable = 1, writable = 2, timed_out = 4;

  explicit fd_waiter(const asio::any_io_executor& ex) : descriptor_(ex), timer_(ex) {}
  ~fd_waiter() { release(); }
  fd_waiter(const fd_waiter&) = delete;
  fd_waiter& operator=(const fd_waiter&) = delete;

  /// Watches the library's descriptor `fd` from now on (through a duplicate). `fresh`: the
  /// library may have closed the old one and got the same number again (libpq between connect
  /// attempts), so duplicate it anew.
  void watch(int fd, bool fresh = false) {
    if (!fresh && descriptor_.is_open() && library_fd_ == fd)
      return;
    release();
    if (fd < 0)
      return;
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
      return;  // nothing to watch: wait() reports 0 and the library's call meets the fault
    library_fd_ = fd;
    descriptor_.assign(copy);
  }
  /// Stops watching and closes the duplicate. Pending waits complete, cancelled.
  void release() {
    unwatch_idle();
    reading_.reset();
    if (descriptor_.is_open()) {
      error_code ignored;
      descriptor_.close(ignored);
    }
    library_fd_ = -1;
    timer_.cancel();
  }
  /// The duplicate (same socket as the library's), for setsockopt and shutdown; -1 if none.
  [[nodiscard]] int fd() noexcept { return descriptor_.is_open() ? descriptor_.native_handle() : -1; }
  [[nodiscard]] bool waiting() const noexcept { return pending_ > 0; }

  /// Waits for any of `events` (readable | writable) or `timeout`; `done(ready)` gets what
  /// happened (0: the wait was cancelled by release()). `owner` keeps the caller alive meanwhile.
  void wait(unsigned events, std::optional<std::chrono::milliseconds> timeout, std::shared_ptr<void> owner,
            std::function<void(unsigned)> done) {
    ready_ = 0;
    done_ = std::move(done);
    pending_ = 0;
    if ((events & readable) && descriptor_.is_open()) {
      ++pending_;
      read_for(purpose::wait, owner, owner);
    } else {
      unwatch_idle();
    }
    if ((events & writable) && descriptor_.is_open()) {
      ++pending_;
      descriptor_.async_wait(asio::posix::descriptor_base::wait_write,
                             [this, owner](error_code ec) { woke(writable, ec); });
    }
    if (timeout) {
      ++pending_;
      timer_.expires_after(*timeout);
      timer_.async_wait([this, owner](error_code ec) { woke(timed_out, ec); });
    }
    if (pending_ == 0)  // nothing to wait on (no descriptor): report it, posted
      asio::post(timer_.get_executor(), [this, owner] { std::exchange(done_, nullptr)(0); });
  }

  /// While the library is idle: `input()` once the socket turns readable (data, end of file, an
  /// error), unless unwatch_idle(), wait() or release() came first. `owner` is held weakly: the
  /// watch never keeps its caller alive, and finds it gone instead.
  void watch_idle(std::weak_ptr<void> owner, std::function<void()> input) {
    if (!descriptor_.is_open())
      return;
    if (idle_watch())
      return;
    read_for(purpose::idle, std::move(owner)).input = std::move(input);
  }
  /// Ends the idle watch; its read wait stays armed for the wait() that usually follows.
  void unwatch_idle() {
    if (auto r = idle_watch())
      r->forget();
  }

private:
  enum class purpose { none, idle, wait };
  // What the pending read wait serves; shared with its handler, which alone keeps it.
  struct read_watch {
    purpose serves = purpose::none;
    std::weak_ptr<void> weak;      // the owner, always
    std::shared_ptr<void> strong;  // the owner, while it serves a wait
    std::function<void()> input;   // the idle watch's
    void forget() {
      serves = purpose::none;
      input = nullptr;
    }
  };

  [[nodiscard]] std::shared_ptr<read_watch> idle_watch() const {
    auto r = reading_.lock();
    return r && r->serves == purpose::idle ? r : nullptr;
  }

  // The pending read wait, now serving `p` for `owner`; armed if none is pending.
  read_watch& read_for(purpose p, std::weak_ptr<void> owner, std::shared_ptr<void> keep = nullptr) {
    auto r = reading_.lock();
    if (!r) {
      r = std::make_shared<read_watch>();
      reading_ = r;
      // `this` is reached only once the owner (which holds this waiter) is known alive.
      descriptor_.async_wait(asio::posix::descriptor_base::wait_read, [this, r](error_code ec) {
        if (const auto alive = r->strong ? std::move(r->strong) : r->weak.lock())
          read_done(r, ec);
      });
    }
    r->serves = p;
    r->weak = std::move(owner);
    r->strong = std::move(keep);
    r->input = nullptr;
    return *r;
  }

  void read_done(const std::shared_ptr<read_watch>& r, error_code ec) {
    if (reading_.lock() == r)
      reading_.reset();
    switch (r->serves) {
    case purpose::idle:
      if (!ec)
        std::exchange(r->input, nullptr)();
      break;
    case purpose::wait:
      woke(readable, ec);
      break;
    case purpose::none:
      break;
    }
  }

  void woke(unsigned bit, error_code ec) {
    if (!ec && ready_ == 0) {
      ready_ |= bit;
      error_code ignored;
      // The other waits end; the library is called once. The pending read wait ends with them
      // (cancelled), so it can serve nothing more: a watch_idle() or wait() that comes before
      // its handler has run (from done_ below, when the library's call ends in this step) arms
      // a fresh one instead of taking over one that completes cancelled.
      reading_.reset();
      if (descriptor_.is_open())
        descriptor_.cancel(ignored);
      timer_.cancel();
    }
    if (--pending_ == 0)
      std::exchange(done_, nullptr)(ready_);
  }

  asio::posix::stream_descriptor descriptor_;
  asio::steady_timer timer_;
  int library_fd_ = -1;
  std::function<void(unsigned)> done_;
  unsigned ready_ = 0;
  int pending_ = 0;
  std::weak_ptr<read_watch> reading_;
};

} // namespace corolock::detail
