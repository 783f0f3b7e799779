// doctest's implementation, compiled once for every test binary.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
