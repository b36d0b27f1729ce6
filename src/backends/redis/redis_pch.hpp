// Precompiled for the Redis library's sources: the core's header (Asio with coroutines) and Asio's
// SSL stream, which most of them reach through the connection (rediss://). Only this target sees
// OpenSSL's headers; the core and the other stores compile without them.
#pragma once
#include "pch.hpp"
#include <boost/asio/ssl.hpp>
