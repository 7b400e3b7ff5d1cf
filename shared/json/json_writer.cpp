#include "shared/json/json_writer.h"

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

}  // namespace

void JsonWriter::escapeBody(std::string& out, std::string_view value) {
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
    out.append(p + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out.append("\\\"", 2); break;
      case '\\': out.append("\\\\", 2); break;
      case '\n': out.append("\\n", 2); break;
      case '\r': out.append("\\r", 2); break;
      case '\t': out.append("\\t", 2); break;
      case '\b': out.append("\\b", 2); break;
      case '\f': out.append("\\f", 2); break;
      default: {
        const char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0x0f]};
        out.append(u, 6);
      }
    }
  }
  out.append(p + run, n - run);
}

void JsonWriter::escapeTo(std::string& out, std::string_view value) {
  out.push_back('"');
  escapeBody(out, value);
  out.push_back('"');
}

void JsonWriter::stringParts(std::initializer_list<std::string_view> parts) {
  prefix();
  out_.push_back('"');
  for (auto part : parts) escapeBody(out_, part);
  out_.push_back('"');
}

void JsonWriter::integer(int64_t value) {
  prefix();
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, static_cast<size_t>(end - buf));
}

}  // namespace kiln
