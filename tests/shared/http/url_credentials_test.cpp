// Tests of URL user information (shared/http/url.h), redirect Locations and downloadRequest:
// parsing and percent-decoding credentials, keeping them out of messages, resolving relative
// Locations, and telling origins apart.
#include <catch2/catch.hpp>

#include "shared/http/http_client.h"
#include "shared/http/url.h"

using namespace kiln;

TEST_CASE("parseHttpUrl refuses user information unless the caller accepts it",
          "[shared][http][credentials]") {
  auto refused = parseHttpUrl("http://user:s3cret@images.example/disk.raw");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(refused.error().message, Catch::Contains("user information"));
  CHECK_THAT(refused.error().message, !Catch::Contains("s3cret"));

  auto accepted = parseHttpUrl("http://user:s3cret@images.example/disk.raw", UserInfo::Accept);
  REQUIRE(accepted);
  REQUIRE(accepted->credentials);
  CHECK(accepted->credentials->first == "user");
  CHECK(accepted->credentials->second == "s3cret");
  CHECK(accepted->host == "images.example");
  CHECK(accepted->target == "/disk.raw");
  CHECK(accepted->str() == "http://images.example/disk.raw");

  auto plain = parseHttpUrl("http://images.example/disk.raw", UserInfo::Accept);
  REQUIRE(plain);
  CHECK_FALSE(plain->credentials);
}

TEST_CASE("parseHttpUrl percent-decodes user and password and splits them as Python does",
          "[shared][http][credentials]") {
  struct Case {
    const char* url;
    const char* user;
    const char* password;
    const char* host;
    uint16_t port;
  };
  for (const Case& c : {
           // Percent-encoded '@', ':', '/', '%' and a space.
           Case{"https://us%3Aer:p%40ss%3Aw%2Fo%25rd%20x@host.example:8443/i", "us:er",
                "p@ss:w/o%rd x", "host.example", 8443},
           // An empty password, with and without the ':'.
           Case{"http://user:@host/i", "user", "", "host", 80},
           Case{"http://user@host/i", "user", "", "host", 80},
           // An unencoded '@' in the password: the last '@' ends the user information.
           Case{"http://user:p@ss@host:81/i", "user", "p@ss", "host", 81},
           // An unencoded ':' in the password: the first ':' ends the user.
           Case{"http://user:pa:ss@host/i", "user", "pa:ss", "host", 80},
           // An IPv6 literal host.
           Case{"http://user:pw@[fd00::1]:8080/i", "user", "pw", "fd00::1", 8080},
           // A '%' that starts no escape stays as it is (Python's unquote).
           Case{"http://user:100%zz%4@host/i", "user", "100%zz%4", "host", 80},
       }) {
    INFO(c.url);
    auto u = parseHttpUrl(c.url, UserInfo::Accept);
    REQUIRE(u);
    REQUIRE(u->credentials);
    CHECK(u->credentials->first == c.user);
    CHECK(u->credentials->second == c.password);
    CHECK(u->host == c.host);
    CHECK(u->port == c.port);
    CHECK(u->target == "/i");
    CHECK(u->str().find('@') == std::string::npos);
  }
  auto v6 = parseHttpUrl("http://user:pw@[fd00::1]:8080/i", UserInfo::Accept);
  REQUIRE(v6);
  CHECK(v6->ipLiteral);
  CHECK(v6->str() == "http://[fd00::1]:8080/i");

  // "@host" alone names no credentials.
  auto bare = parseHttpUrl("http://@host/i", UserInfo::Accept);
  REQUIRE(bare);
  CHECK_FALSE(bare->credentials);
  CHECK(bare->host == "host");
}

TEST_CASE("parseHttpUrl errors about a URL with user information never quote the password",
          "[shared][http][credentials]") {
  for (const char* url : {"http://user:s3cret@host:99999/i", "http://user:s3cret@/i",
                          "http://user:s3cret@ho st/i", "http://user:s3cret@[::1/i"}) {
    INFO(url);
    auto u = parseHttpUrl(url, UserInfo::Accept);
    REQUIRE_FALSE(u);
    CHECK(u.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(u.error().message, !Catch::Contains("s3cret"));
  }
}

TEST_CASE("sameOrigin compares scheme, host in any case and port", "[shared][http][credentials]") {
  auto origin = [](const char* url) { return *parseHttpUrl(url, UserInfo::Accept); };
  const HttpUrl base = origin("https://Images.Example/a/b");
  CHECK(base.sameOrigin(origin("https://images.example:443/other?q")));
  CHECK(base.sameOrigin(origin("https://u:p@IMAGES.example/")));
  CHECK_FALSE(base.sameOrigin(origin("http://images.example/a/b")));  // https -> http
  CHECK_FALSE(base.sameOrigin(origin("https://images.example:8443/a/b")));
  CHECK_FALSE(base.sameOrigin(origin("https://mirror.example/a/b")));
  CHECK_FALSE(base.sameOrigin(origin("https://images.example.evil/a/b")));
}

TEST_CASE("resolveReference resolves redirect Locations against the URL that answered",
          "[shared][http][redirect]") {
  const HttpUrl base = *parseHttpUrl("http://a.example:8080/dir/sub/image.raw?x=1");
  CHECK(resolveReference(base, "https://b.example/i.raw#frag") == "https://b.example/i.raw");
  CHECK(resolveReference(base, "//c.example/i.raw") == "http://c.example/i.raw");
  CHECK(resolveReference(base, "/top/i.raw?sig=abc") == "http://a.example:8080/top/i.raw?sig=abc");
  CHECK(resolveReference(base, "?y=2") == "http://a.example:8080/dir/sub/image.raw?y=2");
  CHECK(resolveReference(base, "other.raw") == "http://a.example:8080/dir/sub/other.raw");
  CHECK(resolveReference(base, "../up/./i.raw") == "http://a.example:8080/dir/up/i.raw");
  CHECK(resolveReference(base, "/a/../../b") == "http://a.example:8080/b");
  CHECK(resolveReference(base, "  /spaced  ") == "http://a.example:8080/spaced");
  CHECK(resolveReference(base, "") == "http://a.example:8080/dir/sub/image.raw?x=1");
  // The base's own credentials never ride along.
  const HttpUrl withUser = *parseHttpUrl("http://u:p@a.example/x/y", UserInfo::Accept);
  CHECK(resolveReference(withUser, "z") == "http://a.example/x/z");
}

TEST_CASE("downloadRequest sends the URL's own credentials, else the configured ones",
          "[shared][http][credentials]") {
  const BasicCredentials configured{"svc", "svc-pass"};

  auto own = downloadRequest("http://alice:pa%24%24@img.example/d.raw", configured);
  REQUIRE(own);
  CHECK(own->method == "GET");
  CHECK(own->url == "http://img.example/d.raw");
  REQUIRE(own->basicAuth);
  CHECK(*own->basicAuth == BasicCredentials{"alice", "pa$$"});
  CHECK(own->maxRedirects == kDownloadMaxRedirects);

  auto fallback = downloadRequest("http://img.example/d.raw", configured);
  REQUIRE(fallback);
  CHECK(fallback->basicAuth == configured);

  auto none = downloadRequest("http://img.example/d.raw", std::nullopt);
  REQUIRE(none);
  CHECK_FALSE(none->basicAuth);

  auto bad = downloadRequest("ftp://alice:secret@img.example/d.raw", configured);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(bad.error().message, !Catch::Contains("secret"));
}
