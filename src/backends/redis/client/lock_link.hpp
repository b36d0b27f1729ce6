// Private: what the Redis lock backend may use of a Redis client — the one seam between the client
// (connections, subscriptions, Sentinel, a cluster's map) and the lock backend above it
// (backends/redis/lock_backend.hpp). The client implements it (client_impl); the backend holds a
// client only as a lock_link, so it reaches no connection, field or flag of the client that is not
// named here, and the client knows no lock: it calls its one client_extension on a reconnect of
// the lock connection and at its close.
//
// What crosses it:
//  - the lock connection's requests: scripts, renewals, releases (exec, exec_withdrawable and
//    withdraw), and whether that connection is up;
//  - the lock channels: a listener added to or removed from the lock connection's subscriptions
//    (on RESP3 the same connection, so a SUBSCRIBE and an attempt sent after it arrive in order:
//    lock_pubsub_ordered);
//  - facts the lock scripts and rules need: the client's id (owners start with it), its
//    configuration (request_timeout, the queue timings, Sentinel), how grants are published
//    (publish_verb: a cluster node's by sharded pub/sub), closed, ready_for_locks;
//  - the server's words of the last refusal (note_server_error), which client::last_server_error
//    shows;
//  - the extension: the layer above, hung on the client and destroyed with it.
//
// Every call is made on executor(), and every completion runs there (the client's one executor).
#pragma once

#include "backends/redis/client/listener.hpp"
#include "detail/completion.hpp"

#include <corolock/redis/config.hpp>
#include <corolock/redis/connection.hpp>
#include <corolock/redis/request.hpp>

#include <memory>
#include <string>
#include <type_traits>

namespace corolock::redis::detail {
using corolock::detail::handler;
using corolock::detail::runs_on;

struct pending;

/// What a layer above the client keeps per client, and the two events it must hear of.
class client_extension {
public:
  virtual ~client_extension() = default;
  /// The lock connection came back (a server that restarted or a promoted master may have
  /// forgotten what the layer wrote).
  virtual void on_reconnect() = 0;
  /// The client closes, before its connections do: `last` gets the requests to send on the lock
  /// connection before it closes (a closing client's releases).
  virtual void on_close(request& last) = 0;
};

class lock_link {
public:
  using reply_handler = handler<void(error_code, response)>;

  /// The client's executor.
  virtual const asio::any_io_executor& executor() const noexcept = 0;
  /// The client's id ("<client_name>-<random>"): every owner of its locks starts with it.
  virtual const std::string& client_id() const noexcept = 0;
  virtual const client_config& config() const noexcept = 0;
  /// client::close() was called.
  virtual bool closed() const noexcept = 0;
  /// Lock operations can start (connected once).
  virtual bool ready_for_locks() const noexcept = 0;
  /// The lock connection is up now.
  virtual bool lock_connected() const noexcept = 0;
  /// A lock channel's SUBSCRIBE and a request sent after it reach the server in that order (they
  /// share the lock connection: RESP3).
  virtual bool lock_pubsub_ordered() const noexcept = 0;
  /// How the lock scripts announce grants: "publish", or a cluster node's "spublish".
  virtual const char* publish_verb() const noexcept = 0;

  /// Queues `req` on the lock connection; `h`: `void(error_code, response)`, not yet erased.
  template <typename Handler>
  void exec(request&& req, Handler&& h) {
    const bool on_executor = runs_on(h, executor());
    exec_erased(std::move(req), reply_handler(std::forward<Handler>(h)), on_executor);
  }
  /// exec(), keeping a weak handle on the request for withdraw().
  template <typename Handler>
  std::weak_ptr<pending> exec_withdrawable(request&& req, Handler&& h) {
    const bool on_executor = runs_on(h, executor());
    return exec_withdrawable_erased(std::move(req), reply_handler(std::forward<Handler>(h)),
                                    on_executor);
  }
  /// Takes back a request of exec_withdrawable() if none of it has been written: it completes
  /// with operation_aborted and never reaches the server. False once written or completed.
  virtual bool withdraw(const std::weak_ptr<pending>& p) = 0;

  /// Adds `l` to `channel`'s listeners on the lock connection (the first sends SUBSCRIBE). False,
  /// and nothing done, before the client has connected (no lock subscriptions exist yet).
  virtual bool listen(const std::string& channel, listener* l) = 0;
  /// Removes `l` from `channel`'s listeners (the last sends UNSUBSCRIBE); nothing if not there.
  virtual void stop_listening(const std::string& channel, listener* l) = 0;
  /// The server has confirmed `channel`'s subscription on the lock connection since it last
  /// (re)connected: a listener added to it now hears no on_subscribed(false) of its own (a note
  /// watch on RESP2, where the subscription has a connection of its own, is in place at once).
  virtual bool lock_channel_confirmed(const std::string& channel) const = 0;

  /// The server's words of the last refusal, shown by client::last_server_error().
  virtual void note_server_error(std::string words) = 0;

  /// The layer above, or null; set_extension replaces it (destroyed with the client).
  virtual client_extension* extension() const noexcept = 0;
  virtual void set_extension(std::unique_ptr<client_extension> e) = 0;

protected:
  lock_link() = default;
  ~lock_link() = default;
  virtual void exec_erased(request&& req, reply_handler&& h, bool on_executor) = 0;
  virtual std::weak_ptr<pending> exec_withdrawable_erased(request&& req, reply_handler&& h,
                                                          bool on_executor) = 0;
};

} // namespace corolock::redis::detail
