#include "tests/fuzz/fuzz_support.h"

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace kiln::fuzz {
namespace {

/// At most this much of a detail is printed (responses can be megabytes).
constexpr size_t kMaxDetail = 4096;

}  // namespace

void fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "\n==kiln-fuzz== %.*s\n", static_cast<int>(what.size()), what.data());
  if (!detail.empty()) {
    const size_t n = std::min(detail.size(), kMaxDetail);
    std::fprintf(stderr, "%.*s%s\n", static_cast<int>(n), detail.data(),
                 detail.size() > n ? "\n[...]" : "");
  }
  std::fflush(stderr);
  std::abort();
}

bool isValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > text.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) {
      return false;  // overlong
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

void checkJsonText(std::string_view text, std::string_view what) {
  if (!isValidUtf8(text)) fail(std::string(what) + " is not valid UTF-8", text);
  if (!nlohmann::json::accept(text)) fail(std::string(what) + " is not valid JSON", text);
}

uint8_t InputReader::byte() {
  if (rest_.empty()) return 0;
  const auto b = static_cast<uint8_t>(rest_.front());
  rest_.remove_prefix(1);
  return b;
}

std::string_view InputReader::until(std::string_view separator) {
  const size_t at = rest_.find(separator);
  if (at == std::string_view::npos) {
    const std::string_view all = rest_;
    rest_ = {};
    return all;
  }
  const std::string_view piece = rest_.substr(0, at);
  rest_.remove_prefix(at + separator.size());
  return piece;
}

}  // namespace kiln::fuzz
