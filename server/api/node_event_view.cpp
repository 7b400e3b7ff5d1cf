#include "server/api/node_event_view.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

/// Client input quoted in a message: at most 64 bytes, as JSON escapes it.
std::string quoteInput(std::string_view text) {
  const std::string cut(text.substr(0, 64));
  return dumpJson(nlohmann::json(cut)) + (text.size() > 64 ? "..." : "");
}

std::string jsonQuoted(std::string_view text) {
  return dumpJson(nlohmann::json(std::string(text)));
}

}  // namespace

Result<int64_t> parseEventId(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return invalid("Invalid " + std::string(what) + " " + quoteInput(text) +
                   ": expected an event id (an integer from 0 to 9223372036854775807).");
  };
  if (text.empty() || text.size() > 19) return bad();
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad();
    const int digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return bad();
    value = value * 10 + digit;
  }
  return value;
}

Result<std::vector<std::string>> parseEventKinds(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!node_event::validKind(item)) {
      return invalid("Invalid kind " + quoteInput(item) +
                     ": expected a comma-separated list of event kinds (lower-case letters, "
                     "digits and underscores, such as step_finished).");
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) {
      if (out.size() == kMaxEventKinds) {
        return invalid("Invalid kind: at most " + std::to_string(kMaxEventKinds) +
                       " kinds may be asked for at once.");
      }
      out.emplace_back(item);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool wantsEventStream(std::optional<std::string_view> accept) {
  if (!accept) return false;
  std::string_view rest = *accept;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view range = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    range = range.substr(0, range.find(';'));
    while (!range.empty() && (range.front() == ' ' || range.front() == '\t'))
      range.remove_prefix(1);
    while (!range.empty() && (range.back() == ' ' || range.back() == '\t')) range.remove_suffix(1);
    if (asciiLower(std::string(range)) == "text/event-stream") return true;
  }
  return false;
}

std::string renderNodeEvent(const NodeEvent& e) {
  std::string fields = e.fields;
  if (mayContainSecret(fields)) {
    auto parsed = parseJson(fields, "a stored event");
    if (parsed && parsed->is_object()) {
      maskJson(*parsed);
      fields = dumpJson(*parsed);
    } else {
      fields = "{}";
    }
  }
  if (fields.size() < 2 || fields.front() != '{' || fields.back() != '}') fields = "{}";
  std::string out;
  out.reserve(fields.size() + e.time.size() + e.kind.size() + 160);
  out += "{\"id\":";
  out += std::to_string(e.id);
  out += ",\"time\":";
  out += jsonQuoted(e.time);
  out += ",\"kind\":";
  out += jsonQuoted(e.kind);
  out += ",\"node_uuid\":";
  out += jsonQuoted(e.nodeUuid);
  out += ",\"conductor\":";
  out += e.conductor.empty() ? std::string("null") : jsonQuoted(e.conductor);
  const std::string_view inner = std::string_view(fields).substr(1, fields.size() - 2);
  if (inner.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    out += ',';
    out += inner;
  }
  out += '}';
  return out;
}

std::string eventStreamFrame(const NodeEvent& e) {
  // One data line: JSON whitespace outside strings is the only place a raw line break could
  // be (strings escape theirs), and there it may become a space.
  std::string data = renderNodeEvent(e);
  std::replace(data.begin(), data.end(), '\n', ' ');
  std::replace(data.begin(), data.end(), '\r', ' ');
  return "id: " + std::to_string(e.id) + "\ndata: " + data + "\n\n";
}

}  // namespace kiln::server
