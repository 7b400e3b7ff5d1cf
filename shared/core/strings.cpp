#include "shared/core/strings.h"

#include <algorithm>
#include <cstdint>

namespace kiln {

std::string_view trimView(std::string_view text, std::string_view chars) {
  const auto first = text.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(chars) - first + 1);
}

std::string trim(std::string_view text, std::string_view chars) {
  return std::string(trimView(text, chars));
}

std::string_view trimEnd(std::string_view text, std::string_view chars) {
  const auto last = text.find_last_not_of(chars);
  return last == std::string_view::npos ? std::string_view() : text.substr(0, last + 1);
}

namespace {

char lowered(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }
char raised(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - ('a' - 'A')) : c; }

}  // namespace

char asciiLower(char c) { return lowered(c); }

std::string asciiLower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = lowered(c);
  return out;
}

std::string asciiUpper(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = raised(c);
  return out;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lowered(a[i]) != lowered(b[i])) return false;
  }
  return true;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    out.push_back(
        text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return out;
}

std::vector<std::string> splitTrimmed(std::string_view text, char sep, std::string_view chars) {
  std::vector<std::string> out;
  for (std::string_view item : split(text, sep)) {
    item = trimView(item, chars);
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

size_t utf8SequenceLength(std::string_view text, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n;
}

std::string escapeInvalidUtf8(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8SequenceLength(text, i);
    if (n == 0) {
      const auto c = static_cast<unsigned char>(text[i]);
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string_view truncateUtf8(std::string_view text, size_t maxBytes) {
  if (text.size() <= maxBytes) return text;
  size_t end = 0;
  while (end < text.size()) {
    const size_t n = std::max<size_t>(1, utf8SequenceLength(text, end));
    if (end + n > maxBytes) break;
    end += n;
  }
  return text.substr(0, end);
}

namespace detail {

std::unexpected<Error> notAnInteger(std::string_view text) {
  return invalid("'" + std::string(text) + "' is not an integer");
}

std::unexpected<Error> integerOutOfRange(std::string_view text, const std::string& min,
                                         const std::string& max) {
  return invalid(std::string(text) + " is not between " + min + " and " + max);
}

}  // namespace detail

}  // namespace kiln
