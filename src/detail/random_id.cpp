#include "detail/random_id.hpp"

#include <boost/system/system_error.hpp>

#include <cerrno>
#include <cstddef>

#include <sys/random.h>

namespace corolock::detail {

std::string random_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw boost::system::system_error(errno, boost::system::system_category(), "getrandom");
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t i = 0; i < 16; ++i) {
    out[2 * i] = hex[bytes[i] >> 4];
    out[2 * i + 1] = hex[bytes[i] & 15];
  }
  return out;
}

} // namespace corolock::detail
