#include "backends/redis/client/transport.hpp"

#include "detail/tls.hpp"

namespace corolock::redis::detail {

bool transport::start_tls(asio::ssl::context& ctx, const std::string& server_name, bool verify,
                          std::string& why) {
  tls_.emplace(socket_, ctx);
  return corolock::detail::prepare_tls_session(tls_->native_handle(), server_name, verify, why);
}

} // namespace corolock::redis::detail
