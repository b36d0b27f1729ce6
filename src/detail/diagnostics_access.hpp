// Private: how an operation writes the words of its failure into the caller's diagnostics.
#pragma once

#include <corolock/diagnostics.hpp>
#include <corolock/error.hpp>

#include <boost/asio/error.hpp>

#include <string>
#include <string_view>

namespace corolock::detail {

struct diagnostics_access {
  /// The server's error reply (a no-op without diagnostics, or without words).
  static void server(diagnostics* d, std::string_view text) {
    if (d && !text.empty())
      d->server_.assign(text);
  }
  /// corolock's own words.
  static void client(diagnostics* d, std::string_view text) {
    if (d && !text.empty())
      d->client_.assign(text);
  }
  /// `said` (the words of one part of a larger operation: a Redlock master, a segment), with
  /// `label` naming that part put before corolock's own words.
  static diagnostics labelled(const diagnostics& said, std::string label) {
    diagnostics out;
    server(&out, said.server_message());
    client(&out, said.client_message().empty() ? label : label + ": " + said.client_message());
    return out;
  }
  /// Whether `ec` is a code that says it all: its operation leaves no words (docs/api.md).
  static bool says_it_all(error_code ec) noexcept {
    return ec == error::timeout || ec == error::not_connected || ec == error::closed ||
           ec == boost::asio::error::operation_aborted;
  }
  /// An acquisition's failure: always in words (what and where), but a cancellation's.
  static void acquisition_failure(diagnostics* d, error_code ec, std::string_view text) {
    if (ec != boost::asio::error::operation_aborted)
      of(d, ec, text);
  }
  /// The words of a lock operation's failure, as of(), unless its code says it all.
  static void failure(diagnostics* d, error_code ec, std::string_view text) {
    if (!says_it_all(ec))
      of(d, ec, text);
  }
  /// The words behind `ec`: an error reply's are the server's, the rest corolock's own.
  static void of(diagnostics* d, error_code ec, std::string_view text) {
    if (ec == error::redis_error)
      server(d, text);
    else
      client(d, text);
  }
};

} // namespace corolock::detail
