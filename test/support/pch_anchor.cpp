// Compiles the precompiled header (pch.hpp) that the test binaries reuse.
