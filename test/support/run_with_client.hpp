// What the tests' worker processes do in main: run one coroutine with a corolock::redis::client on its
// own io_context and turn how it ended into an exit code. The inventory_race demo owns the one
// copy (its folder stays self-contained, to be lifted out as it is); the workers borrow it.
#pragma once

#include "../../examples/inventory_race/with_client.hpp"

namespace corolock::test {
using inventory_race::with_client;
} // namespace corolock::test
