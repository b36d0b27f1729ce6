#include "backends/testing/backend.hpp"
#include "backends/testing/store_access.hpp"
#include "core/engine.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>

namespace corolock::testing {

struct client::impl {
  asio::any_io_executor ex;
  detail::backend* link = nullptr; // owned by the lock core (lock_source::lock_core)
  std::chrono::milliseconds request_timeout{}; // the store's: async_close's default bound
};

client::client(executor_type ex, store& s) : impl_(std::make_unique<impl>()) {
  impl_->ex = ex;
  impl_->request_timeout = s.options().request_timeout;
  auto b = std::make_unique<detail::backend>(std::move(ex), detail::store_access::of(s));
  impl_->link = b.get();
  make_lock_core(std::move(b));
}

client::~client() {
  if (lock_core())
    lock_core()->close(std::chrono::milliseconds(0), [] {});
}

client::executor_type client::get_executor() const noexcept { return impl_->ex; }
const std::string& client::id() const noexcept { return impl_->link->id(); }
std::uint64_t client::session() const noexcept { return impl_->link->session(); }
std::size_t client::held() const noexcept { return lock_core()->held(); }
std::size_t client::waiting() const noexcept { return lock_core()->waiting(); }

void client::async_close_impl(std::chrono::milliseconds bound,
                              corolock::detail::handler<void(error_code)> h) {
  lock_core()->close(bound, [h = std::move(h)]() mutable {
    asio::dispatch(asio::append(std::move(h), error_code{}));
  });
}

std::chrono::milliseconds client::default_close_bound() const noexcept { return impl_->request_timeout; }

void client::set_reachable(bool reachable) { impl_->link->set_reachable(reachable); }
void client::drop_connection() { impl_->link->drop_connection(); }
void client::lose_replies(int n) { impl_->link->lose_replies(n); }
void client::expire_session() { impl_->link->expire_session(); }

} // namespace corolock::testing
