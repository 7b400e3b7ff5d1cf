#include "shared/core/strings.h"

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
