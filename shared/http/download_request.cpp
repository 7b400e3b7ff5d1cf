// downloadRequest (shared/http/http_client.h): where a download's credentials come from.
#include "shared/http/http_client.h"
#include "shared/http/url.h"

namespace kiln {

Result<HttpRequest> downloadRequest(std::string_view url,
                                    const std::optional<BasicCredentials>& fallback) {
  HttpUrl parsed = KILN_TRY(parseHttpUrl(url, UserInfo::Accept));
  HttpRequest request;
  request.method = "GET";
  request.url = parsed.str();
  request.basicAuth = parsed.credentials ? parsed.credentials : fallback;
  request.maxRedirects = kDownloadMaxRedirects;
  return request;
}

}  // namespace kiln
