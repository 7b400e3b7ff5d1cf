#include "shared/json/json_writer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace kiln {
namespace {

/// 1 for bytes that must be escaped inside a JSON string (controls, '"' and '\\'), 2 for the
/// bytes that start or continue a multi-byte UTF-8 sequence (checked, see utf8SequenceLength).
constexpr std::array<uint8_t, 256> kEscape = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = 1;
  t['"'] = 1;
  t['\\'] = 1;
  for (int c = 0x80; c < 0x100; ++c) t[c] = 2;
  return t;
}();

/// The length of the well-formed UTF-8 sequence at p[0..n) (RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF), or 0 when it is not one.
size_t utf8SequenceLength(const unsigned char* p, size_t n) {
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < n && p[i] >= lo && p[i] <= hi;
  };
  const unsigned char c = p[0];
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/// True if any of the 8 bytes in `w` is a control character, '"', '\\' or not ASCII (SWAR:
/// the classic "has a byte less than n" and "has a zero byte" tests).
inline bool anyNeedsEscape(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const uint64_t lessThan20 = (w - kOnes * 0x20) & ~w & kHigh;
  const uint64_t q = w ^ (kOnes * '"');
  const uint64_t quote = (q - kOnes) & ~q & kHigh;
  const uint64_t b = w ^ (kOnes * '\\');
  const uint64_t backslash = (b - kOnes) & ~b & kHigh;
  return (lessThan20 | quote | backslash | (w & kHigh)) != 0;
}

/// Appends the escaped form of `value` (no quotes) through `append(const char*, size_t)`.
/// Bytes that are not well-formed UTF-8 become U+FFFD, so the output is always valid JSON
/// text whatever a client sent.
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
    if (kEscape[c] == 2) {
      const size_t length = utf8SequenceLength(reinterpret_cast<const unsigned char*>(p + i), n - i);
      if (length > 0) {
        i += length - 1;
        continue;
      }
      append(p + run, i - run);
      run = i + 1;
      append("\xEF\xBF\xBD", 3);
      continue;
    }
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
