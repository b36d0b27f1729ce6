// Private: where a lock lives in ZooKeeper's tree, and which names the server would refuse.
//
// lock_options::prefix names the root folder of every lock: one trailing ':' is dropped (the
// default "corolock:" is Redis-shaped) and a leading '/' added, so "corolock:" → "/corolock",
// "app/locks" → "/app/locks", "/app/locks:" → "/app/locks". A lock `name` is one node below it:
// "<root>/<name>", a container holding the contenders' nodes. The root's folders are containers
// too (made on first use), so the tree goes when the last lock under it goes.
//
// The server refuses (bad_arguments) a path with an empty segment, "." or "..", a control character
// or a character of U+007F..U+009F, U+D800..U+F8FF, U+FFF0..U+FFFF or past U+FFFF (it checks UTF-16
// units, and such a character is a surrogate pair), and bytes that are not UTF-8;
// "/zookeeper" is its own. Those are refused here with words, when the handle is made, instead.
#pragma once

#include <string>
#include <string_view>

namespace corolock::zookeeper::detail {

/// The root path for a lock_options::prefix, or "" with `words` saying why it cannot be one.
std::string lock_root(std::string_view prefix, std::string& words);

/// Whether `name` can be one node's name; else `words` says why.
bool valid_node_name(std::string_view name, std::string& words);

/// Whether `chroot` ("" or "/a/b") can be a client's root: each segment a node name (no "." or
/// ".."), and not in "/zookeeper", the server's own; else `words` says why.
bool valid_chroot(std::string_view chroot, std::string& words);

} // namespace corolock::zookeeper::detail
