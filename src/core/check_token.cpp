// check_token (its header): the holder's token read through the seam (backend::holder_token), for
// a store whose traits say holder_token; the refusal's words for one that cannot tell.
#include <corolock/lock/check_token.hpp>

#include "core/abortable.hpp"
#include "core/source_access.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/executor_check.hpp"
#include "detail/printable_name.hpp"

#include <corolock/error.hpp>

#include <boost/system/system_error.hpp>

namespace corolock {

namespace core {

void backend::holder_token(const lock_spec&, handler<void(error_code, std::uint64_t, std::string)> h) {
  // Never called by the core for a store without the trait (async_check_token refuses first).
  detail::complete_later(get_executor(), std::move(h), {}, error_code(error::invalid_argument),
                         std::uint64_t{0},
                         "the " + std::string(traits().store) + " store cannot read its holder's token");
}

} // namespace core

void detail::async_check_token(lock_source& source, std::string name, std::uint64_t token,
                               lock_options options, diagnostics* diag,
                               handler<void(error_code, bool)> h) {
  auto& eng = core::source_access::core_of(source);
  auto ex = eng.store().get_executor();
  const auto refuse = [&](error_code ec, const std::string& words) {
    detail::diagnostics_access::client(diag, words);
    detail::complete_later(ex, std::move(h), {}, ec, false);
  };
  std::shared_ptr<core::handle> lock;
  try { // the name and options checked as a mutex's (a store's own options included)
    lock = core::source_access::make(source, core::lock_kind::mutex, std::move(name),
                                     std::move(options), 1, "corolock::check_token");
  } catch (const boost::system::system_error& e) {
    return refuse(e.code(), e.what());
  }
  const auto& traits = eng.store().traits();
  if (!traits.holder_token)
    return refuse(error::invalid_argument,
                  "corolock::check_token: lock " + printable_name(lock->spec->name) + ": the " +
                      std::string(traits.store) +
                      " store has no single holder's token to compare (backend_traits::holder_token)");
  if (eng.closed())
    return refuse(error::closed, "corolock::check_token: the client is closed");
  auto op = core::abortable<bool>::make(ex, diag, std::move(h), asio::cancellation_type::all);
  eng.store().holder_token(*lock->spec,
                           [op, token, spec = lock->spec](error_code ec, std::uint64_t held,
                                                          std::string words) {
                             op->finish(ec, words, !ec && held != 0 && held == token);
                           });
}

} // namespace corolock
