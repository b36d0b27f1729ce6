#include "backends/postgresql/error_map.hpp"

namespace corolock::postgresql {

error map_error(std::string_view sqlstate, bool session_alive, phase when) noexcept {
  if (sqlstate.starts_with("28"))  // invalid_authorization_specification, invalid_password
    return error::auth_failed;
  if (when == phase::connecting)
    return error::connect_failed;
  return session_alive ? error::database_error : error::connection_lost;
}

} // namespace corolock::postgresql
