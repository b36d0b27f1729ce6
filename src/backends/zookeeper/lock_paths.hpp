// Private: where a lock lives in ZooKeeper's tree, and which names the server would refuse.
//
// lock_options::prefix names the root folder of every lock: one trailing ':' is dropped (the
// default "corolock:" is Redis-shaped) and a leading '/' added, so "corolock:" → "/corolock",
// "app/locks" → "/app/locks", "/app/locks:" → "/app/locks" (those spellings name one folder).
// A prefix is any bytes: each '/' separates two folders, and each folder's name is escaped as a
// lock name is (node_name below); an empty one (in "", "a//b", "a/") is written "%", which no
// escape is, and a first folder "zookeeper" (the server's own) "%7Aookeeper". So every prefix has
// a root, and two prefixes that are not spellings of one path never share one: each folder reads
// back. A prefix the server took before keeps its root unless it holds a '%'. A lock `name` is
// one node below it: "<root>/<name>", a container holding the contenders' nodes. The root's
// folders are containers too (made on first use), so the tree goes when the last lock under it
// goes.
//
// The server refuses (bad_arguments) a path with an empty segment, "." or "..", a control character
// or a character of U+007F..U+009F, U+D800..U+F8FF, U+FFF0..U+FFFF or past U+FFFF (it checks UTF-16
// units, and such a character is a surrogate pair), and bytes that are not UTF-8;
// "/zookeeper" is its own. In a chroot (a path of folders) those are refused here with words, when
// the client is made, instead; a prefix escapes them.
//
// A lock name is any bytes (lock_options::max_name), so node_name() escapes what one node's name
// cannot hold: '/', the escape character '%' itself, each byte of a character the server refuses
// (control characters, U+007F..U+009F, U+D800..U+F8FF, U+FFF0..U+FFFF, anything past U+FFFF) and
// each byte that is not part of a well-formed UTF-8 character, as %XX (two upper-case hex digits);
// a name that would then be "." or ".." has its dots escaped (%2E, %2E%2E). Every other character
// stands for itself, '%' appears only to start an escape, and an escape reads back as its byte,
// so the name can be read back from its node: two names never share a node. A name the server
// took before (every name allowed before names were escaped) keeps its node unless it holds a
// '%'. The node's name is at most 3 × max_name bytes (every byte escaped), and the lock's deepest
// path under 3.5 KB: ZooKeeper bounds a path only by its packet limit (jute.maxbuffer, 1 MiB by
// default), so every name fits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace corolock::zookeeper::detail {

/// The root path for a lock_options::prefix (any bytes), as above.
std::string lock_root(std::string_view prefix);

/// The node of lock `name` (any bytes) below the root: `name` escaped as above.
std::string node_name(std::string_view name);

/// The folders of path `dir`, top first: "/a", "/a/b", "/a/b/c" for "/a/b/c" (what a create
/// makes, one by one, when the server says a parent is missing).
std::vector<std::string> containers_of(const std::string& dir);

/// Whether `name` can be one node's name as it is; else `words` says why.
bool valid_node_name(std::string_view name, std::string& words);

/// Whether `chroot` ("" or "/a/b") can be a client's root: each segment a node name (no "." or
/// ".."), and not in "/zookeeper", the server's own; else `words` says why.
bool valid_chroot(std::string_view chroot, std::string& words);

} // namespace corolock::zookeeper::detail
