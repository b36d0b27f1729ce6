// The public etcd client (include/corolock/etcd/client.hpp): its lease session and its lock core.
#include <corolock/etcd/client.hpp>

#include "backends/etcd/lease_session.hpp"
#include "backends/etcd/lock_backend.hpp"
#include "core/engine.hpp"
#include "detail/close_within.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <corolock/error.hpp>

#include <boost/system/system_error.hpp>

namespace corolock::etcd {

namespace detail {
class client_impl {
public:
  client_impl(asio::any_io_executor e, config c) : ex(e), cfg(c), session(std::make_shared<lease_session>(e, c)) {}
  asio::any_io_executor ex;
  config cfg;
  std::shared_ptr<lease_session> session;
};
} // namespace detail

namespace {
void refuse(const std::string& why) {
  throw boost::system::system_error(make_error_code(error::invalid_argument), "etcd::client: " + why);
}
} // namespace

client::client(executor_type ex, config cfg) {
  if (cfg.hosts.empty())
    refuse("no hosts in the config");
  if (cfg.lease.count() <= 0 || cfg.request_timeout.count() <= 0 || cfg.connect_timeout.count() <= 0)
    refuse("lease, request_timeout and connect_timeout must be positive");
  const bool tls_fields = !cfg.tls_ca_file.empty() || !cfg.tls_ca_dir.empty() || !cfg.tls_cert_file.empty() ||
                          !cfg.tls_key_file.empty() || !cfg.tls_server_name.empty();
  if (!cfg.tls && tls_fields)
    refuse("tls_* files or a server name with tls off (a plain connection would ignore them): set tls");
  if (cfg.tls_cert_file.empty() != cfg.tls_key_file.empty())
    refuse("tls_cert_file and tls_key_file go together");
  impl_ = std::make_shared<detail::client_impl>(std::move(ex), std::move(cfg));
}

client::client(executor_type ex, std::string_view url) : client(std::move(ex), config::from_url(url)) {}

client::~client() {
  if (lock_core()) {
    // The backend refers to the session: cut it off first, then let the engine fail its callers and
    // mark its leases lost; bound 0, nothing waits here. The lease expires at the store.
    static_cast<detail::lock_backend&>(lock_core()->store()).detach();
    lock_core()->close(std::chrono::milliseconds(0), [](auto&&...) {});
  }
  impl_->session->give_up();
}

void client::lock_core_needed() { make_lock_core(std::make_unique<detail::lock_backend>(impl_->session)); }

client::executor_type client::get_executor() const noexcept { return impl_->ex; }
const config& client::get_config() const noexcept { return impl_->cfg; }
std::int64_t client::lease_id() const noexcept { return impl_->session->lease(); }

void client::async_connect_impl(diagnostics* diag, corolock::detail::handler<void(error_code)> h) {
  using corolock::detail::complete_later;
  if (impl_->session->closed())
    return complete_later(impl_->ex, std::move(h), asio::cancellation_slot{}, error_code(error::closed));
  if (impl_->session->started())
    return complete_later(impl_->ex, std::move(h), asio::cancellation_slot{}, error_code(error::invalid_argument));
  auto shared = std::make_shared<corolock::detail::handler<void(error_code)>>(std::move(h));
  impl_->session->connect([shared, diag](error_code ec, std::string words) {
    if (ec == error::not_connected || ec == error::timeout || ec == error::connection_lost)
      ec = error::connect_failed;
    if (ec)
      corolock::detail::diagnostics_access::client(diag, words);
    std::move(*shared)(ec);
  });
}

void client::async_close_impl(std::chrono::milliseconds bound, corolock::detail::handler<void(error_code)> h) {
  if (!lock_core()) {
    auto session = impl_->session;
    auto done = corolock::detail::close_within(impl_->ex, bound, std::move(h), [session] { session->give_up(); });
    return session->close([done] { done(); });
  }
  auto done = std::make_shared<corolock::detail::handler<void(error_code)>>(std::move(h));
  lock_core()->close(bound, [done] { std::move(*done)(error_code{}); });
}

} // namespace corolock::etcd
