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
// One read wait serves both: the idle watch's pending read is taken over by the next wait() for
// readable (and left armed, serving nobody, by unwatch_idle()) instead of being cancelled and
// armed anew. Each read wait armed costs Asio an epoll_ctl (it re-arms the edge-triggered
// registration) and each cancel a handler run; a statement used to pay two of each, now one arm
// and no cancel (lock_bench --backend postgres, uncontended: 4 -> 2 epoll_ctl a cycle). A read
// wait's handler holds its `read_slot`, which says whom it serves now: a wait's owner (held, as
// every wait keeps its caller alive), an idle watcher (weakly: the watch never keeps its caller
// alive), or nobody (it then does nothing). The waiter itself holds the slot only weakly, so an
// io_context destroyed with the wait pending frees the owner with the handler: no cycle.
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
    if (descriptor_.is_open()) {
      error_code ignored;
      descriptor_.close(ignored);
    }
    library_fd_ = -1;
    timer_.cancel();
    unwatch_idle();  // a pending wait's read ends cancelled, and says so to its owner
    read_.reset();
  }
  /// The duplicate (same socket as the library's), for setsockopt and shutdown; -1 if none.
  [[nodiscard]] int fd() noexcept { return descriptor_.is_open() ? descriptor_.native_handle() : -1; }
  [[nodiscard]] bool waiting() const noexcept { return pending_ > 0; }

  /// Waits for any of `events` (readable | writable) or `timeout`; `done(ready)` gets what
  /// happened (0: the wait was cancelled by release()). `owner` keeps the caller alive meanwhile.
  void wait(unsigned events, std::optional<std::chrono::milliseconds> timeout, std::shared_ptr<void> owner,
            std::function<void(unsigned)> done) {
    unwatch_idle();
    ready_ = 0;
    done_ = std::move(done);
    pending_ = 0;
    if ((events & readable) && descriptor_.is_open()) {
      ++pending_;
      auto slot = read_.lock();
      if (!slot || slot->serves_wait)
        slot = arm_read();
      slot->serves_wait = true;
      slot->keeper = owner;
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
    auto slot = read_.lock();
    if (slot && slot->serves_idle)
      return;
    if (!slot || slot->serves_wait)
      slot = arm_read();
    slot->serves_idle = true;
    slot->watcher = std::move(owner);
    idle_input_ = std::move(input);
  }
  void unwatch_idle() {
    if (auto slot = read_.lock(); slot && slot->serves_idle) {
      slot->serves_idle = false;
      slot->watcher.reset();
    }
    idle_input_ = nullptr;
  }

private:
  // Whom the pending read wait serves (see the opening comment).
  struct read_slot {
    bool serves_wait = false;
    std::shared_ptr<void> keeper;  // the wait's owner
    bool serves_idle = false;
    std::weak_ptr<void> watcher;   // the idle watch's owner
  };

  std::shared_ptr<read_slot> arm_read() {
    auto slot = std::make_shared<read_slot>();
    read_ = slot;
    descriptor_.async_wait(asio::posix::descriptor_base::wait_read, [this, slot](error_code ec) {
      const auto alive = slot->serves_wait ? slot->keeper : slot->watcher.lock();
      if (!alive)
        return;  // nobody to tell (and `this` may be gone)
      if (read_.lock() == slot)
        read_.reset();
      if (slot->serves_wait)
        return woke(readable, ec);
      if (slot->serves_idle && !ec)
        std::exchange(idle_input_, nullptr)();
    });
    return slot;
  }

  void woke(unsigned bit, error_code ec) {
    if (!ec && ready_ == 0) {
      ready_ |= bit;
      error_code ignored;
      if (pending_ > 1 && descriptor_.is_open())
        descriptor_.cancel(ignored);  // the other waits end; the library is called once
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
  std::weak_ptr<read_slot> read_;       // the pending read wait, if any
  std::function<void()> idle_input_;
};

} // namespace corolock::detail
