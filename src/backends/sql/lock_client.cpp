#include <corolock/sql/lock_client.hpp>

#include "core/engine.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

namespace corolock::sql {

lock_client::lock_client(asio::any_io_executor ex, std::unique_ptr<core::backend> backend)
    : executor_(std::move(ex)) {
  make_lock_core(std::move(backend));
}

lock_client::~lock_client() {
  // The engine's close marks leases lost and ends the sessions; nothing waits for it here.
  lock_core()->close(std::chrono::milliseconds(0), [](auto&&...) {});
}

void lock_client::close() {
  // Bound 0: the releases start and are given up at once (the sessions dropped), as at destruction.
  lock_core()->close(std::chrono::milliseconds(0), [](auto&&...) {});
}

void lock_client::start_close(std::chrono::milliseconds bound, detail::handler<void(error_code)> h) {
  auto done = std::make_shared<detail::handler<void(error_code)>>(std::move(h));
  asio::post(executor_, [engine = lock_core(), bound, done] {
    // The engine answers on the client's executor; the handler runs on its own (a strand it is
    // bound to), as every Asio operation's completion does.
    engine->close(bound, [done] { asio::dispatch(asio::append(std::move(*done), error_code{})); });
  });
}

std::size_t lock_client::held() const noexcept { return lock_core()->held(); }
std::size_t lock_client::waiting() const noexcept { return lock_core()->waiting(); }

} // namespace corolock::sql
