// Private: the Redis names of one lock — its key and the keys and channel around it. Every name
// shares the hash tag {name}, so one Cluster slot holds all of a lock.
//
// A lock name is any bytes (lock_options::max_name). Inside the tag, '{' is written "{(" and '}'
// is written "{)": a '}' there would end the tag early (another slot for a lock's other keys, and
// "x}" and "x}y" would share one). The tag never holds a '}', '{' is always followed by '(' or
// ')', and every other byte stands for itself, so two names never share a key; a name without
// '{' or '}' (every name before they were allowed) keeps its key.
//
// A prefix (lock_options::prefix) is any bytes too. Before the tag it must hold no '{' (the first
// '{' of a key opens its hash tag: a prefix's would move every lock under it to one slot, and a
// prefix "x{a" with name "(b" would share the key x{a{(b} with prefix "x", name "a{b"), so there
// '{' is written "}(" and '}' is written "})": the prefix's part holds no '{', '}' is always
// followed by '(' or ')', every other byte stands for itself. The key's first '{' then opens the
// tag, the part before it reads back as the prefix and the tag as the name: two (prefix, name)
// pairs never share a key, and the slot follows the name alone, as before. A prefix without '{'
// or '}' (every prefix before they were allowed) keeps its keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::redis::detail {

/// The text of a lock's hash tag: `name` with '{' written "{(" and '}' written "{)".
std::string hash_tag_of(std::string_view name);

/// The prefix's part of a key: `prefix` with '{' written "}(" and '}' written "})".
std::string prefix_of_key(std::string_view prefix);

/// A lock's key: prefix_of_key(prefix){hash_tag_of(name)}. Its other keys and its channel add a
/// suffix.
std::string lock_key(std::string_view prefix, std::string_view name);

/// A lock's note (backend::note): the hash lock_key(prefix, name) + lock_names::note_suffix, with
/// fields term and value (note.lua). Named by the prefix and name alone, as the marks' set
/// "<lock key>:empty": one note whatever the lock's kind, in the slot of the lock's hash tag.
std::string note_key(std::string_view prefix, std::string_view name);

/// What a lock's Redis data is: a mutex (one holder), or permits (a semaphore, a shared_mutex).
enum class lock_kind : std::uint8_t { mutex, permits };

/// The Redis names of one lock (all share the hash tag {name}, so one Cluster slot holds them).
/// Made once per handle (the Redis backends' lock ticket, backend_state.hpp): only the key is
/// stored; the other names are the key and a suffix, which the requests write as two pieces
/// (script_requests.cpp) and never build as strings. Every held lock keeps one of these.
struct lock_names {
  /// A mutex: prefix{name}.
  lock_names(std::string_view prefix, std::string_view lock_name);
  /// Permits: prefix{name}<suffix> (":sem", ":rw": apart from a mutex of the same name), with
  /// `default_permits` where no count was set at run time.
  lock_names(std::string_view prefix, std::string_view lock_name, std::string_view suffix,
             std::int64_t default_permits);
  std::string key;  // mutex: the string '<token> <owner>', the lease as its PX
                    // permits: hash owner -> '<permits> <token>' (see permits_common.lua)
  lock_kind kind = lock_kind::mutex;
  std::int64_t default_permits = 1;

  /// The suffixes of the lock's other names, after its key.
  static constexpr std::string_view fence_suffix = ":fence";   ///< the last fencing token handed out
  static constexpr std::string_view queue_suffix = ":q";       ///< waiting owners, by arrival
  static constexpr std::string_view expiry_suffix = ":qx";     ///< waiting owners, by expiry
  static constexpr std::string_view channel_suffix = ":ch";    ///< grant announcements
  static constexpr std::string_view holder_ends_suffix = ":hx"; ///< permits: holders, by lease end
  static constexpr std::string_view wants_suffix = ":qn";      ///< permits: what each waiter wants
  static constexpr std::string_view permit_count_suffix = ":cap"; ///< permits: the run-time count
  /// A token bucket (backend::take_tokens, rate_limiter): hash tokens, at_us (take_tokens.lua).
  static constexpr std::string_view bucket_suffix = ":bucket";
  /// A lock's note (backend::note, note_key): hash term, value (note.lua).
  static constexpr std::string_view note_suffix = ":note";

  /// The names as strings (the channel a grant_channel subscribes to, the tests): key + suffix.
  std::string fence() const { return key + std::string(fence_suffix); }
  std::string queue() const { return key + std::string(queue_suffix); }
  std::string expiry() const { return key + std::string(expiry_suffix); }
  std::string channel() const { return key + std::string(channel_suffix); }
  std::string holder_ends() const { return key + std::string(holder_ends_suffix); }
  std::string wants() const { return key + std::string(wants_suffix); }
  std::string permit_count() const { return key + std::string(permit_count_suffix); }
  /// The KEYS of every permit script, in their order.
  std::vector<std::string> permit_keys() const {
    return {key, fence(), queue(), expiry(), holder_ends(), wants(), permit_count()};
  }
};

} // namespace corolock::redis::detail
