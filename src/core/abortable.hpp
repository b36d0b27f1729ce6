// Private: the completion of a store operation that cancellation may end first (guard::unlock,
// semaphore::set_permits / status). The caller's handler completes exactly once: with
// operation_aborted when its cancellation slot fires with an accepted type, or with the store's
// answer; whichever comes second is dropped (the request itself goes on). Only the winner writes
// the caller's diagnostics, which live as long as the handler has not completed.
#pragma once

#include "core/backend.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/error.hpp>

#include <functional>
#include <memory>
#include <string_view>

namespace corolock::core {

template <typename... Values>
class abortable : public std::enable_shared_from_this<abortable<Values...>> {
public:
  using caller_handler = handler<void(error_code, Values...)>;

  /// Takes the caller's handler; its slot (if any) is assigned at once. `aborted` (may be empty)
  /// runs right after a cancellation completed the caller: what waits for the operation stops.
  static std::shared_ptr<abortable> make(asio::any_io_executor ex, diagnostics* diag,
                                         caller_handler h, asio::cancellation_type accepted,
                                         std::function<void()> aborted = {}) {
    auto op = std::make_shared<abortable>();
    op->ex_ = std::move(ex);
    op->diag_ = diag;
    op->slot_ = asio::get_associated_cancellation_slot(h);
    op->h_.set(std::move(h));
    if (op->slot_.is_connected())
      op->slot_.assign([w = op->weak_from_this(), accepted,
                        aborted = std::move(aborted)](asio::cancellation_type t) {
        if ((t & accepted) == asio::cancellation_type::none)
          return;
        auto p = w.lock();
        if (!p || !p->h_)
          return;
        p->finish(asio::error::operation_aborted, {}, Values{}...);
        if (aborted)
          aborted();
      });
    return op;
  }

  /// Whether the caller was completed (by finish() or a cancellation).
  bool done() const noexcept { return !h_; }

  /// Completes the caller (posted) unless it completed already.
  void finish(error_code ec, std::string_view words, Values... values) {
    if (!h_)
      return;
    if (ec)
      detail::diagnostics_access::failure(diag_, ec, words);
    // The slot is cleared on the posted turn, never here: this may run inside its own handler,
    // which clearing would destroy while it runs.
    detail::complete_later(ex_, h_.take(), slot_, ec, std::move(values)...);
  }

private:
  asio::any_io_executor ex_;
  diagnostics* diag_ = nullptr;
  asio::cancellation_slot slot_;
  // Never move-assigned (see detail/completion.hpp).
  detail::stored_handler<caller_handler> h_;
};

} // namespace corolock::core
