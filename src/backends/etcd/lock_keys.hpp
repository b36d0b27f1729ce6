// Private: where an etcd lock lives — its folder and its bids' keys (lock_backend.hpp has the
// layout), its marks and its note. The folder is "<escaped prefix>/<escaped name>/<kind>/", each part %-escaping '%' and
// '/', so two (prefix, name) pairs never share a folder and every byte of a name (NUL included:
// etcd keys are bytes) can be a lock's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace corolock::etcd::detail {

/// `part` with '%' and '/' as %25 and %2F.
std::string escape_part(std::string_view part);
/// What a folder holds: a mutex's bids, a read-write lock's, a semaphore's, or a lock's marks.
enum class folder_kind { mutex, read_write, semaphore, marks };
/// A lock's folder (see above): "<prefix>/<name>/" then "mutex/", "rw/", "sem/" or "marks/".
std::string lock_folder(std::string_view prefix, std::string_view name, folder_kind kind);
/// A mark's key in a marks folder: the index in five digits, so that keys sort as indexes.
std::string mark_key(std::string_view folder, std::uint32_t index);
/// A bid's key in `folder`: "w.<owner>" (a writer, a mutex bid) or "r.<owner>" (a reader).
std::string bid_key(std::string_view folder, std::string_view owner, bool reader);
/// A lock's note (backend::note): the one key "<prefix>/<name>/note", beside the lock's folders
/// rather than in one. Every folder range ends in "<kind>/" and no kind is "note", so no bid's
/// rule, holder read, or marks read or clear ever covers the note, and writing or reading the
/// note touches none of their keys; the escaped prefix and name keep it apart from every other
/// lock's keys as they keep the folders apart.
std::string note_key(std::string_view prefix, std::string_view name);

} // namespace corolock::etcd::detail
