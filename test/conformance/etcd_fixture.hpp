// The etcd conformance fixtures' shared part (etcd.cpp: one member; etcd_cluster.cpp: three): the
// client's settings, and what the store holds read from a member itself, synchronously (the cases
// ask between two awaits): a lock's keys are "<prefix>/<name>/mutex/w.<owner>" (or
// ".../rw/r.<owner>" and ".../rw/w.<owner>"), the line in create-revision order; a mutex's first key
// holds, a read-write lock's readers before its first writer hold (or that writer, first).
//
// The session is the lease: lost_by_the_local_deadline uses session_lease (the client's lease TTL)
// as its bound. Traits it lacks: a fixed lease (a_lacking_trait_is_refused asks for one) and a
// token bucket.
#pragma once

#include "backends/etcd/lock_keys.hpp"

#include <support/etcd_server.hpp>

#include <corolock/etcd/client.hpp>
#include <corolock/lock/options.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace corolock::conformance {

struct etcd_fixture_base {
  using source = corolock::etcd::client;
  static constexpr bool refuses_bucket = true; // no clock of the store's to count against
  /// The lease's TTL: whole seconds at the store, its least with the member's election timeout.
  static constexpr auto session_lease = std::chrono::milliseconds(2000);

  /// A client's settings for the members at `hosts` ("127.0.0.1:p1,127.0.0.1:p2").
  static corolock::etcd::config config_for(const std::string& hosts) {
    auto c = corolock::etcd::config::from_url("etcd://" + hosts);
    c.lease = session_lease;
    c.connect_timeout = std::chrono::milliseconds(500);
    c.request_timeout = std::chrono::milliseconds(1000);
    return c;
  }

  /// The keys of one folder in line order (create revision), read from the member at `port`.
  static std::vector<corolock::test::etcd_key> line(std::uint16_t port, const std::string& folder) {
    auto keys = corolock::test::etcd_keys(port, folder);
    std::sort(keys.begin(), keys.end(),
              [](const auto& x, const auto& y) { return x.create_revision < y.create_revision; });
    return keys;
  }
  /// A lock's keys but its holders', in both folders of the default prefix.
  static std::size_t queued_at(std::uint16_t port, const std::string& name) {
    using corolock::etcd::detail::folder_kind;
    using corolock::etcd::detail::lock_folder;
    const auto mutex = line(port, lock_folder("corolock:", name, folder_kind::mutex));
    std::size_t waiting = mutex.empty() ? 0 : mutex.size() - 1;
    // A semaphore's: the permit cases keep one holder (cases.hpp), so its keys but the first.
    const auto sem = line(port, lock_folder("corolock:", name, folder_kind::semaphore));
    waiting += sem.empty() ? 0 : sem.size() - 1;
    const auto rw_folder = lock_folder("corolock:", name, folder_kind::read_write);
    const auto rw = line(port, rw_folder);
    std::size_t holders = 0;
    while (holders < rw.size() && rw[holders].key.compare(rw_folder.size(), 2, "r.") == 0)
      ++holders;
    holders = std::max<std::size_t>(holders, rw.empty() ? 0 : 1);
    return waiting + rw.size() - holders;
  }
  /// Nothing at all in the store: every key a lock makes is one of a client's lease.
  /// No key but elections' notes (data, kept by design: "<prefix>/<name>/note").
  static bool clean_at(std::uint16_t port) {
    const auto keys = corolock::test::etcd_keys(port, "");
    return std::all_of(keys.begin(), keys.end(),
                       [](const corolock::test::etcd_key& k) { return k.key.ends_with("/note"); });
  }
  static std::optional<corolock::lock_options> lacking() {
    corolock::lock_options o;
    o.watchdog = false; // a lock lives as long as its lease
    return o;
  }
};

} // namespace corolock::conformance
