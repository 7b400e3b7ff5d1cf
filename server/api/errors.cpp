#include "server/api/errors.h"

#include "shared/core/secrets.h"
#include "shared/json/json_writer.h"

namespace kiln::server {

ApiResponse errorResponse(const Error& error) {
  ApiResponse r;
  r.status = httpStatus(error.code);
  JsonWriter inner;
  inner.beginObject();
  inner.field("faultcode", r.status >= 500 ? "Server" : "Client");
  // Messages quote values: a URL carrying user:password@ is masked in every error answer.
  inner.field("faultstring", maskUrlsInText(error.message));
  inner.key("debuginfo");
  inner.null();
  inner.endObject();
  JsonWriter outer;
  outer.beginObject();
  outer.field("error_message", inner.str());
  outer.endObject();
  r.body = outer.take();
  return r;
}

ApiResponse authErrorResponse(int status, const std::string& message) {
  ApiResponse r;
  r.status = status;
  JsonWriter w;
  w.beginObject();
  w.key("error");
  w.beginObject();
  w.field("message", message);
  w.key("code");
  w.integer(status);
  w.endObject();
  w.endObject();
  r.body = w.take();
  if (status == 401) {
    r.setHeader("WWW-Authenticate", "Basic realm=\"Baremetal API\"");
  }
  return r;
}

}  // namespace kiln::server
