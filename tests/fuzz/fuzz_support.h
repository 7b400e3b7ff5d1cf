// File: tests/fuzz/fuzz_support.h
//
// What every libFuzzer target of tests/fuzz/ shares (docs/fuzzing.md): a failure that libFuzzer
// records as a crash, the checks a parser's output must pass, and a small reader that splits
// one fuzz input into the pieces a target needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::fuzz {

/// Prints `what` and `detail` (shortened) to stderr and aborts: libFuzzer then saves the input
/// that got here as a crash file.
[[noreturn]] void fail(std::string_view what, std::string_view detail = {});

/// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or values past
/// U+10FFFF).
bool isValidUtf8(std::string_view text);

/// Aborts unless `text` is valid UTF-8 that parses as JSON (nlohmann, without exceptions).
void checkJsonText(std::string_view text, std::string_view what);

/// Reads a fuzz input from the front: one selector byte, or a piece up to a separator. Each
/// read consumes what it returns; reads past the end give 0 or "".
class InputReader {
 public:
  InputReader(const uint8_t* data, size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}

  /// The next byte, or 0 at the end.
  uint8_t byte();
  /// Everything up to (not including) the next `separator`, which is consumed; everything when
  /// there is none.
  std::string_view until(std::string_view separator);
  /// Everything not read yet.
  std::string_view rest() const { return rest_; }
  bool empty() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

}  // namespace kiln::fuzz
