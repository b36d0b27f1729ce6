#include "backends/postgresql/error_map.hpp"

namespace corolock::postgresql {

error map_error(std::string_view sqlstate, bool session_alive, phase when) noexcept {
  if (sqlstate.starts_with("28") || sqlstate == "42501") // invalid_authorization_specification,
    return error::auth_failed;                           // invalid_password; insufficient_privilege
  if (when == phase::connecting) {
    const bool not_now = sqlstate.empty() || sqlstate.starts_with("08") || sqlstate.starts_with("53") ||
                         sqlstate.starts_with("57");
    return not_now ? error::connect_failed : error::database_error;
  }
  return session_alive ? error::database_error : error::connection_lost;
}

std::string take_connect_sqlstate(std::string& message) {
  // The last error's severity word: libpq keeps the messages of every address it tried.
  std::string sqlstate;
  for (const std::string_view severity : {"FATAL:  ", "ERROR:  ", "PANIC:  "}) {
    const auto at = message.rfind(severity);
    if (at == std::string::npos)
      continue;
    const auto code = at + severity.size();
    if (message.size() < code + 7 || message.compare(code + 5, 2, ": ") != 0)
      continue;
    bool valid = true;
    for (std::size_t i = code; i < code + 5; ++i)
      valid = valid && ((message[i] >= '0' && message[i] <= '9') || (message[i] >= 'A' && message[i] <= 'Z'));
    if (!valid)
      continue;
    sqlstate = message.substr(code, 5);
    message.erase(code, 7);
    break;
  }
  if (const auto location = message.find("\nLOCATION:"); location != std::string::npos) {
    const auto end = message.find('\n', location + 1);
    message.erase(location, end == std::string::npos ? std::string::npos : end - location);
  }
  return sqlstate;
}

} // namespace corolock::postgresql
