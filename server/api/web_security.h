// File: server/api/web_security.h
//
// What keeps a browser session from being made to write by another site (docs/security.md
// "Browsers"). A web page of another origin can make a browser send a form (POST with
// `application/x-www-form-urlencoded`, `multipart/form-data` or `text/plain`, whatever its
// body looks like) or a "simple" fetch with the same content types, and the browser adds any
// HTTP basic credentials it has cached for Kiln; anything else cross-origin needs a CORS
// preflight, which Kiln never grants. So a write (any method but GET, HEAD and OPTIONS) is
// refused, before authentication and before any handler runs, when:
//   - it carries an `Origin` header that is not one of the server's own origins (403): the
//     scheme and Host it was reached at, and the origin of [api] public_endpoint; browsers send
//     Origin with every cross-origin request and every non-GET one; other clients (the
//     baremetal CLI, gophercloud, the agent) send none and are not affected;
//   - its Content-Type is one of the three a form can send (415): the API takes JSON only.
// The console (console/, docs/console.md) sends its writes from its own origin as JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/http.h"

namespace kiln::server {

/// True for a Host header (or an origin's authority) that can stand in a URL and in an iPXE
/// script: a name or an address with an optional port. Anything else (spaces, bytes above
/// 0x7f, '/', '@', '$', ...) is refused.
bool isUrlAuthority(std::string_view host);

/// "scheme://host[:port]", lowercased, without the scheme's default port (80, 443); nullopt
/// when `text` is not an http(s) origin or URL with an authority ("null", "file://", junk).
/// Only the part up to the first '/', '?' or '#' after the authority is read.
std::optional<std::string> normalizeOrigin(std::string_view text);

/// True for a Content-Type an HTML form (or a CORS-simple fetch) can send: text/plain,
/// application/x-www-form-urlencoded, multipart/form-data, whatever their parameters and case.
bool isFormContentType(std::string_view contentType);

/// The origins a browser shows for pages of this server: `scheme` ("http"/"https") + the
/// request's Host (when usable), and `publicEndpoint`'s origin (when set).
std::vector<std::string> ownOrigins(std::string_view scheme, std::optional<std::string_view> host,
                                    std::string_view publicEndpoint);

/// The refusal for a cross-site write (see the file comment), or nullopt to let it through.
/// `tls`: the API is served over HTTPS.
std::optional<ApiResponse> refuseCrossSiteWrite(const ApiRequest& request, bool tls,
                                                std::string_view publicEndpoint);

}  // namespace kiln::server
