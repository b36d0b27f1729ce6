// Precompiled for the library's own sources: Asio with coroutines is most of their compile time.
#pragma once
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <string>
#include <vector>
