// Private: where an etcd lock lives — its folder and its bids' keys (lock_backend.hpp has the
// layout). The folder is "<escaped prefix>/<escaped name>/<kind>/", each part %-escaping '%' and
// '/', so two (prefix, name) pairs never share a folder and every byte of a name (NUL included:
// etcd keys are bytes) can be a lock's.
#pragma once

#include <string>
#include <string_view>

namespace corolock::etcd::detail {

/// `part` with '%' and '/' as %25 and %2F.
std::string escape_part(std::string_view part);
/// A lock's folder (see above); `read_write` picks "rw/", else "mutex/".
std::string lock_folder(std::string_view prefix, std::string_view name, bool read_write);
/// A bid's key in `folder`: "w.<owner>" (a writer, a mutex bid) or "r.<owner>" (a reader).
std::string bid_key(std::string_view folder, std::string_view owner, bool reader);

} // namespace corolock::etcd::detail
