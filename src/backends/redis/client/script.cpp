#include <corolock/redis/script.hpp>

#include <boost/uuid/detail/sha1.hpp>

#include <cstdio>

namespace corolock::redis {

std::string sha1_hex(std::string_view data) {
  boost::uuids::detail::sha1 hash;
  hash.process_bytes(data.data(), data.size());
  boost::uuids::detail::sha1::digest_type digest;
  hash.get_digest(digest);
  std::string out;
  out.reserve(40);
  char buf[9];
  for (auto word : digest) {
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(word));
    out.append(buf, 8);
  }
  return out;
}

script::script(std::string source) : source_(std::move(source)), sha1_(sha1_hex(source_)) {}

} // namespace corolock::redis
