// Precompiled for every test source: Asio with coroutines and Boost.Test dominate compile time.
#pragma once
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <string>
#include <vector>
