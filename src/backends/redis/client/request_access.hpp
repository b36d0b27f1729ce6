// Private: what the connection may do to a request beyond the public interface.
#pragma once

#include <corolock/redis/request.hpp>

namespace corolock::detail {

struct request_access {
  /// Appends one already-encoded command answered by one reply (a NOSCRIPT replay).
  static void append_raw(request& r, std::string_view encoded) { r.append_raw(encoded); }
};

} // namespace corolock::detail
