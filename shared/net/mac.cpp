#include "shared/net/mac.h"

#include "shared/core/strings.h"

namespace kiln::net {
namespace {

bool isHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

std::optional<std::string> parseMac(std::string_view text, MacSeparators accepted) {
  if (text.size() != 17) return std::nullopt;
  std::string out(17, ':');
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i % 3 == 2) {
      if (c != ':' && !(c == '-' && accepted == MacSeparators::ColonOrDash)) return std::nullopt;
    } else {
      if (!isHexDigit(c)) return std::nullopt;
      out[i] = asciiLower(c);
    }
  }
  return out;
}

std::string pxeMac(std::string_view mac) {
  std::string out = "01-";
  for (char c : mac) out += c == ':' ? '-' : asciiLower(c);
  return out;
}

}  // namespace kiln::net
