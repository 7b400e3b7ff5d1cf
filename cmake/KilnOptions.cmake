# Build options (house-style rule 2). All prefixed KILN_.
option(KILN_BUILD_TESTS "Build the Catch2 test suites" ON)
option(KILN_BUILD_ROOT_TESTS "Build tests that need root (loop devices, real mdadm)" OFF)
option(KILN_AGENT_STATIC "Link kiln-agent fully statically" ON)
option(KILN_WITH_POSTGRES "Build the PostgreSQL storage back end" OFF)
option(KILN_ENABLE_SANITIZERS "Build with AddressSanitizer and UBSan" OFF)
option(KILN_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only; docs/fuzzing.md)" OFF)
