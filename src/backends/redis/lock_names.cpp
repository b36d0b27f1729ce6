#include "backends/redis/lock_names.hpp"

namespace corolock::detail {

lock_names::lock_names(const std::string& prefix, std::string lock_name)
    : name(std::move(lock_name)), key(prefix + "{" + name + "}") {}

lock_names::lock_names(const std::string& prefix, std::string lock_name, std::string_view suffix,
                       std::int64_t permits)
    : name(std::move(lock_name)), key(prefix + "{" + name + "}"), kind(lock_kind::permits),
      default_permits(permits) {
  key += suffix;
}

} // namespace corolock::detail
