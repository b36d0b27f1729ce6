// Private: what a new connection says to the server before it carries requests, without the I/O.
// The connection writes each request this machine asks for and feeds back the replies (pushes
// already set aside); the machine decides what comes next, which RESP version was negotiated, and
// what a refusal means. The unit tests feed it replies by hand, without a server.
//
// The conversation, one request at a time:
//   1. HELLO 3 [AUTH user password] [SETNAME name]       (when the config asks for RESP3)
//        refused as unknown (a server before Redis 6): carry on in RESP2;
//        refused otherwise (WRONGPASS ...): fail.
//   2. [AUTH [user] password] [CLIENT SETNAME name]      (RESP2 only: HELLO did these in RESP3)
//      [SELECT db]                                       (both)
//        in one write; the first error reply fails the handshake.
//   3. ROLE                                              (when only a master will do: Sentinel)
//        anything but an array starting with "master" is error::not_master.
#pragma once

#include <corolock/error.hpp>
#include <corolock/redis/config.hpp>
#include <corolock/redis/connection.hpp>
#include <corolock/redis/request.hpp>

#include <string>
#include <vector>

namespace corolock::redis::detail {

class handshake {
public:
  /// What the connection does next.
  struct step {
    enum class action {
      send, ///< write `req` and feed its replies (req.expected_replies() of them) to on_replies()
      done, ///< the connection is ready; protocol() is the negotiated RESP version
      fail, ///< give up this attempt with `ec`; `why` says what the server refused, in words
    };
    action what = action::done;
    request req;
    error_code ec;
    std::string why;
  };

  /// `cfg` must outlive the handshake. `master_only`: finish with the ROLE check.
  handshake(const client_config& cfg, bool master_only) : cfg_(cfg), master_only_(master_only) {}

  /// The first step (HELLO, or the RESP2 setup, or done when there is nothing to say).
  step start();
  /// The step after the replies to the request of the last `send` step.
  step on_replies(const response& replies);

  /// The RESP version the server speaks with us so far: 2 until HELLO 3 succeeded.
  int protocol() const noexcept { return protocol_; }

  /// How a server's refusal is classified: error::auth_failed for a credentials or permission
  /// problem (WRONGPASS, NOAUTH, NOPERM, "invalid password"), else error::connect_failed.
  static error_code classify_refusal(const resp::value& reply);
  /// Whether a refused HELLO means "no such command" (a server before Redis 6): fall back to RESP2.
  static bool hello_unknown(const resp::value& reply);

private:
  enum class stage { start, hello, setup, role, finished };

  step setup_or_next();
  step role_or_done();
  step finish(error_code ec = {}, std::string why = {});
  step send(request req, stage next);

  const client_config& cfg_;
  bool master_only_;
  stage stage_ = stage::start;
  int protocol_ = 2;
  std::vector<std::string> setup_commands_; // the name of each command of the setup request
};

} // namespace corolock::redis::detail
