#include "shared/json/json_writer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace kiln {
namespace {

/// 1 for bytes that must be escaped inside a JSON string (controls, '"' and '\\').
constexpr std::array<uint8_t, 256> kEscape = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = 1;
  t['"'] = 1;
  t['\\'] = 1;
  return t;
}();

/// True if any of the 8 bytes in `w` is a control character, '"' or '\\' (SWAR: the classic
/// "has a byte less than n" and "has a zero byte" tests).
inline bool anyNeedsEscape(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const uint64_t lessThan20 = (w - kOnes * 0x20) & ~w & kHigh;
  const uint64_t q = w ^ (kOnes * '"');
  const uint64_t quote = (q - kOnes) & ~q & kHigh;
  const uint64_t b = w ^ (kOnes * '\\');
  const uint64_t backslash = (b - kOnes) & ~b & kHigh;
  return (lessThan20 | quote | backslash) != 0;
}

/// Appends the escaped form of `value` (no quotes) through `append(const char*, size_t)`.
template <typename Append>
void escapeInto(std::string_view value, Append&& append) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char* p = value.data();
  const size_t n = value.size();
  // Fast path: most strings (UUIDs, names, timestamps, URLs) need no escaping at all.
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (anyNeedsEscape(w)) break;
  }
  size_t run = 0;
  for (; i < n; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (!kEscape[c]) continue;
    append(p + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': append("\\\"", 2); break;
      case '\\': append("\\\\", 2); break;
      case '\n': append("\\n", 2); break;
      case '\r': append("\\r", 2); break;
      case '\t': append("\\t", 2); break;
      case '\b': append("\\b", 2); break;
      case '\f': append("\\f", 2); break;
      default: {
        const char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0x0f]};
        append(u, 6);
      }
    }
  }
  append(p + run, n - run);
}

}  // namespace

void JsonWriter::grow(size_t more) {
  buf_.resize(std::max(buf_.size() * 2, len_ + more));
}

void JsonWriter::escapeBody(std::string_view value) {
  escapeInto(value, [this](const char* data, size_t n) { put(data, n); });
}

void JsonWriter::escapeTo(std::string& out, std::string_view value) {
  out.push_back('"');
  escapeInto(value, [&out](const char* data, size_t n) { out.append(data, n); });
  out.push_back('"');
}

void JsonWriter::stringParts(std::initializer_list<std::string_view> parts) {
  prefix();
  put('"');
  for (auto part : parts) escapeBody(part);
  put('"');
}

void JsonWriter::integer(int64_t value) {
  prefix();
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  put(buf, static_cast<size_t>(end - buf));
}

}  // namespace kiln
