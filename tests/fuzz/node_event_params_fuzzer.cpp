// Fuzz target node_event_params (docs/fuzzing.md): what a client sends to
// GET /v1/nodes/{node}/events besides the node (server/api/node_event_view.h). The first byte
// chooses (any other byte picks one by its value modulo 4), the rest is the input:
//   's' ?since= and Last-Event-ID (parseEventId)
//   'k' ?kind= (parseEventKinds)
//   'a' an Accept header (wantsEventStream)
//   'e' an event's fields (a JSON object read from the input) and kind, rendered as the
//       listing and the stream show it (renderNodeEvent, eventStreamFrame)
// None may crash; an accepted id is the number its digits say; accepted kinds are valid,
// distinct, at most kMaxEventKinds and parse back to themselves; a rendered event is one
// JSON object, and one stream frame has exactly one data line.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api/node_event_view.h"
#include "shared/json/json_util.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace kiln;
using kiln::fuzz::fail;

void checkId(std::string_view text) {
  const auto id = server::parseEventId(text, "since");
  if (!id) {
    if (id.error().code != ErrorCode::InvalidArgument) fail("parseEventId: not a 400", text);
    return;
  }
  if (*id < 0) fail("parseEventId: negative", text);
  // The reference: the digits, leading zeros dropped.
  const size_t first = text.find_first_not_of('0');
  const std::string digits =
      first == std::string_view::npos ? "0" : std::string(text.substr(first));
  if (std::to_string(*id) != digits) fail("parseEventId: " + std::to_string(*id), text);
}

void checkKinds(std::string_view text) {
  const auto kinds = server::parseEventKinds(text);
  if (!kinds) return;
  if (kinds->empty() || kinds->size() > server::kMaxEventKinds)
    fail("parseEventKinds: count", text);
  std::string joined;
  for (size_t i = 0; i < kinds->size(); ++i) {
    if (!server::node_event::validKind((*kinds)[i])) fail("parseEventKinds: invalid kind", text);
    for (size_t j = 0; j < i; ++j) {
      if ((*kinds)[i] == (*kinds)[j]) fail("parseEventKinds: duplicate", text);
    }
    joined += (i ? "," : "") + (*kinds)[i];
  }
  const auto again = server::parseEventKinds(joined);
  if (!again || *again != *kinds) fail("parseEventKinds: does not parse back", text);
}

void checkRender(fuzz::InputReader& in) {
  server::NodeEvent e;
  e.id = static_cast<int64_t>(in.byte()) << 40;
  e.kind = std::string(in.until("\n"));
  e.time = std::string(in.until("\n"));
  e.conductor = std::string(in.until("\n"));
  const std::string_view rest = in.rest();
  auto fields = parseJson(rest, "fuzz input");
  // Stored fields are always an object as appendNodeEvent writes it.
  e.fields = fields && fields->is_object() ? dumpJson(*fields) : "{}";
  const std::string rendered = server::renderNodeEvent(e);
  auto parsed = parseJson(rendered, "rendered event");
  if (!parsed || !parsed->is_object() || !parsed->contains("id") || !parsed->contains("kind")) {
    fail("renderNodeEvent: not a JSON object with id and kind: " + rendered, rest);
  }
  const std::string frame = server::eventStreamFrame(e);
  size_t lines = 0;
  for (size_t at = frame.find("\ndata: "); at != std::string::npos;
       at = frame.find("\ndata: ", at + 1)) {
    ++lines;
  }
  if (lines != 1 || !frame.ends_with("\n\n") ||
      frame.find('\n', frame.find("\ndata: ") + 1) != frame.size() - 2) {
    fail("eventStreamFrame: not one id line and one data line", rest);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::InputReader in(data, size);
  uint8_t which = in.byte();
  if (which != 's' && which != 'k' && which != 'a' && which != 'e') {
    which = static_cast<uint8_t>("skae"[which % 4]);
  }
  switch (which) {
    case 's':
      checkId(in.rest());
      (void)server::parseEventId(in.rest(), "Last-Event-ID");
      break;
    case 'k':
      checkKinds(in.rest());
      break;
    case 'a':
      (void)server::wantsEventStream(in.rest());
      break;
    default:
      checkRender(in);
      break;
  }
  return 0;
}
