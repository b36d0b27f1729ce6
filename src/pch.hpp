// Precompiled for the core's sources, and reused by every store's library but Redis (which adds
// the SSL stream in backends/redis/redis_pch.hpp): Asio with coroutines is most of their compile
// time. Nothing store-specific here: the core compiles without OpenSSL's headers.
#pragma once
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <string>
#include <vector>
