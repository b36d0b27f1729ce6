#include "core/handle.hpp"

#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>

namespace corolock::core {

namespace {
void not_served(const handle& h, const char* what, diagnostics* diag,
                detail::handler<void(error_code, semaphore_status)> done) {
  detail::diagnostics_access::client(diag, std::string("this store cannot ") + what +
                                               " a semaphore's permit count");
  detail::complete_later(h.ex, std::move(done), {}, error_code(error::invalid_argument),
                         semaphore_status{});
}
} // namespace

void handle::set_permits(std::int64_t, diagnostics* diag,
                         detail::handler<void(error_code, semaphore_status)> h) {
  not_served(*this, "set", diag, std::move(h));
}

void handle::status(diagnostics* diag, detail::handler<void(error_code, semaphore_status)> h) {
  not_served(*this, "read", diag, std::move(h));
}

} // namespace corolock::core
