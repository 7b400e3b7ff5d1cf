// The one Catch2 main of every test binary. A broken invariant (KILN_BUG) aborts the test run
// here, where production would only log it (shared/core/bug.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "shared/core/bug.h"

int main(int argc, char* argv[]) {
  kiln::setBugsFatal(true);
  return Catch::Session().run(argc, argv);
}
