// Private: HTTP/1.1 to etcd's v3 JSON gateway on the client's one executor (Boost.Beast), chosen
// over gRPC C++ because gRPC's completion queue needs a thread of its own bridged to Asio, while
// the gateway is plain HTTP that one Asio thread drives like every other store of corolock.
//
// Unary calls (kv/txn, kv/range, lease/grant, lease/keepalive ...) go over keep-alive connections
// to the current member, one request per connection at a time, opened as needed and up to eight
// kept idle. A member that cannot be reached (refused, no connection within connect_timeout, or
// answering 502/503 or gRPC "unavailable": no leader, stopping) moves the client to the next
// member; a call that finds none tries again every 100 ms (a member restarting, a leader being
// elected) and ends not_connected, each member's reason in words, when request_timeout passes. A
// call sent and then unanswered within request_timeout ends timeout (and passes that member over,
// its connections closed: see state::pass_over); a connection dropped under a sent
// call ends connection_lost — its outcome unknown, as every store's (the lock backend's requests
// are idempotent per owner: core/backend.hpp, contract 3). A reused idle connection that the member
// closed meanwhile (its write or the first read fails at once) is not a lost call: the call goes
// again on a fresh connection.
//
// Lock calls (lane::lock) are at most max_lock_calls in flight at once, the rest queued here in
// order: 500 locks taken at once would otherwise be 500 requests the member serves side by side, and
// the lease's keepalive, one of them, would wait behind all (with ASan on a loaded machine, past the
// lease's bound: conformance's many_locks_held_at_once lost its locks). The lease's own calls
// (lane::session: grant, keepalive, revoke) never queue. A queued call's request_timeout starts when
// it is sent: the time it waits here is this process's, not the member's.
//
// A watch is a long POST whose chunked reply carries one JSON object per line; the gateway reads a
// request body to its end before answering, so a stream carries one watch and has a connection of
// its own (no request timeout once its header is in: a watch waits as long as the lock is held).
// With etcds:// (config::tls), every connection starts with a TLS handshake within connect_timeout
// (detail/tls.hpp: the trust, the name verified); a member whose certificate or name fails is a
// refusal that does not heal, so a call ends tls_failed at once instead of waiting for a member.
// With config::username, the gateway authenticates before its first request (auth/authenticate)
// and sends the token with every request; a reply saying the token is no longer valid (etcd's simple
// tokens expire, 5 minutes by default) makes it authenticate again, once, and send the request
// again. Completions run on the executor, never inline from the call that started them (each call runs
// in its own coroutine, which starts posted). shutdown() closes every connection; later calls end
// closed.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/etcd/config.hpp>

#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace corolock::etcd::detail {

class gateway : public std::enable_shared_from_this<gateway> {
public:
  using reply_handler = std::function<void(error_code, boost::json::object, std::string)>;

  gateway(asio::any_io_executor ex, config cfg);
  ~gateway();

  /// Which calls may queue behind others (the file's comment).
  enum class lane { lock, session };
  /// Lock calls in flight at once; the others wait their turn in order.
  static constexpr std::size_t max_lock_calls = 64;

  /// POST `target` (e.g. "/v3/kv/txn") with `body`; `h(ec, reply, words)` once, on the executor.
  void call(std::string target, const boost::json::object& body, reply_handler h, lane l = lane::lock);

  /// One watch stream (/v3/watch with one create_request): `on_result` for each result object the
  /// member sends (the first says created, later ones carry events or, when the revision it asked
  /// for was compacted, canceled with compact_revision), `on_end(ec, words)` once when the stream
  /// ends for any reason but cancel().
  class watch {
  public:
    virtual ~watch() = default;
    /// Ends the stream (its connection closed); neither callback runs after it.
    virtual void cancel() = 0;
  };
  std::shared_ptr<watch> open_watch(const boost::json::object& create_request,
                                    std::function<void(const boost::json::object&)> on_result,
                                    std::function<void(error_code, std::string)> on_end);

  /// Members to try after those of the config (the cluster's list, learnt at connect): each one not
  /// known yet is added at the end.
  void add_members(std::vector<endpoint> found);
  /// Closes every connection; calls in flight end closed, later ones at once (posted).
  void shutdown();
  const config& get_config() const noexcept;

  struct connection;

private:
  struct state;
  std::shared_ptr<state> s_;
};

} // namespace corolock::etcd::detail
