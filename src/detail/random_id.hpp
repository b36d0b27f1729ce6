// Fresh identities for clients and lock owners, from the operating system's CSPRNG: any store's
// client may name itself with one, so it lives in the core (corolock::core), not in a store.
#pragma once

#include <string>

namespace corolock::detail {

/// 128 random bits from the operating system's CSPRNG (getrandom), as 32 lower-case hex digits.
/// Throws boost::system::system_error if the system refuses.
std::string random_id();

} // namespace corolock::detail
