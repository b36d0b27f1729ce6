// Private: which slot a request must be sent to in a cluster. Redis refuses commands whose keys
// span slots (CROSSSLOT) only per command; a request of several commands sent to one node needs
// all of them in one slot, which is what this checks before anything is sent. Lock requests are
// EVALSHA with KEYS sharing the lock's hash tag ("corolock:{name}..."), so they pass; a request
// mixing two locks, or two unrelated keys, is refused here with a clear error rather than
// bounced between nodes.
#pragma once

#include <corolock/redis/request.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace corolock::redis::detail {

/// Sets `slot` to the slot every key of `req` hashes to, or to nullopt when no command has keys
/// (PING, SCRIPT LOAD, ...: any node will do).
///
/// Keys are found for: EVAL, EVALSHA, FCALL and their _RO forms (by numkeys); SPUBLISH,
/// SSUBSCRIBE, SUNSUBSCRIBE (the channel decides the slot, as for a key); the commands of the
/// library's own helpers that take one key first (GET, SET, SADD, HGET, PEXPIRE, ...) or only
/// keys (DEL, UNLINK, EXISTS, MGET, TOUCH).
///
/// error::invalid_argument, with `why` (optional) saying which, for keys in more than one slot,
/// a command it cannot tell the keys of (routing it by guess could split a lock), or a script
/// call whose numkeys is not a number within its arguments.
boost::system::error_code request_slot(const request& req, std::optional<std::uint16_t>& slot,
                                       std::string* why = nullptr);

} // namespace corolock::redis::detail
