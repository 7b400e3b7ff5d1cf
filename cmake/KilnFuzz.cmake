# The fuzzing tree (docs/fuzzing.md): configured by scripts/fuzz.sh with clang++-16 and
# -DKILN_FUZZ=ON into its own build directory. Every library is instrumented for libFuzzer's
# coverage feedback and built with AddressSanitizer and UBSan (any UB report aborts, so the
# fuzzer keeps the input); the targets in tests/fuzz/ link libFuzzer's main.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "KILN_FUZZ=ON needs clang with libFuzzer: scripts/fuzz.sh build")
endif()
if(KILN_AGENT_STATIC OR KILN_BUILD_TESTS)
  message(FATAL_ERROR "KILN_FUZZ=ON needs -DKILN_AGENT_STATIC=OFF -DKILN_BUILD_TESTS=OFF")
endif()
# libstdc++ 12 declares std::expected only when __cpp_concepts >= 202002L; clang 16 implements
# what <expected> needs but still reports 201907.
add_compile_options(-U__cpp_concepts -D__cpp_concepts=202002L)
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
# OSS-Fuzz's flags for sanitizer builds: -O1 and line tables only (file:line in the sanitizers'
# stacks). With the sanitizers' instrumentation, -O2 -g (RelWithDebInfo's default) compiles
# about 1.4 times slower, which ctest's fuzz_build pays on every clean tree.
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -gline-tables-only -DNDEBUG")
add_link_options(-fsanitize=address,undefined)
