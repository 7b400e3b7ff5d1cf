// Tests of HttpClient's redirects and where its credentials go (shared/http/http_client.h),
// against the in-process file server (tests/support/http_file_server.h): one on 127.0.0.1,
// another on 127.0.0.2 playing a second host, and a third on 127.0.0.1 with another port.
#include <catch2/catch.hpp>

#include "shared/http/http_client.h"
#include "tests/support/basic_auth.h"
#include "tests/support/http_file_server.h"

using namespace kiln;
using test::basicAuthorization;
using test::HttpFileServer;
using test::ServedPath;

namespace {

ServedPath redirect(std::string location, int status = 302) {
  ServedPath p;
  p.status = status;
  p.location = std::move(location);
  return p;
}

ServedPath body(std::string data) {
  ServedPath p;
  p.data = std::move(data);
  return p;
}

ServedPath guarded(std::string data, const std::string& user, const std::string& password) {
  ServedPath p;
  p.data = std::move(data);
  p.authorization = basicAuthorization(user, password);
  return p;
}

HttpRequest follow(std::string url, int maxRedirects = 5) {
  HttpRequest r;
  r.url = std::move(url);
  r.timeout = std::chrono::seconds(10);
  r.maxRedirects = maxRedirects;
  r.basicAuth = BasicCredentials{"alice", "pa:ss"};
  return r;
}

/// Three servers: `home` (127.0.0.1), `other` (127.0.0.2: another host) and `sidePort`
/// (127.0.0.1, another port).
struct Servers {
  HttpFileServer home;
  HttpFileServer other;
  HttpFileServer sidePort;
  std::string auth = basicAuthorization("alice", "pa:ss");
  Servers() {
    REQUIRE(home.start("127.0.0.1"));
    REQUIRE(other.start("127.0.0.2"));
    REQUIRE(sidePort.start("127.0.0.1"));
  }
};

}  // namespace

TEST_CASE("HttpClient follows a same-origin redirect and sends the credentials to the new path",
          "[shared][http][redirect][credentials]") {
  Servers s;
  s.home.serve("/old/image.raw", redirect("../new/image.raw", 301));
  s.home.serve("/new/image.raw", guarded("IMAGE", "alice", "pa:ss"));
  auto client = makeHttpClient();

  auto response = client->send(follow(s.home.url("/old/image.raw")));
  REQUIRE(response);
  CHECK(response->status == 200);
  CHECK(response->body == "IMAGE");
  CHECK(s.home.authorizations("/old/image.raw") == std::vector<std::string>{s.auth});
  CHECK(s.home.authorizations("/new/image.raw") == std::vector<std::string>{s.auth});

  // HEAD follows too (the image pipeline's Content-Length probe), and streaming hands the
  // sink only the final body.
  HttpRequest head = follow(s.home.url("/old/image.raw"));
  head.method = "HEAD";
  auto probed = client->send(head);
  REQUIRE(probed);
  CHECK(probed->status == 200);
  CHECK(probed->header("content-length") == "5");
  std::string streamed;
  auto got =
      client->stream(follow(s.home.url("/old/image.raw")), [&](std::string_view c) -> Result<void> {
        streamed.append(c);
        return {};
      });
  REQUIRE(got);
  CHECK(streamed == "IMAGE");
}

TEST_CASE("HttpClient never sends the credentials to another host after a redirect",
          "[shared][http][redirect][credentials]") {
  Servers s;
  s.home.serve("/image.raw", redirect(s.other.url("/mirror/image.raw")));
  s.other.serve("/mirror/image.raw", body("MIRRORED"));
  s.home.serve("/guarded.raw", redirect(s.other.url("/guarded.raw"), 307));
  s.other.serve("/guarded.raw", guarded("X", "alice", "pa:ss"));
  auto client = makeHttpClient();

  auto response = client->send(follow(s.home.url("/image.raw")));
  REQUIRE(response);
  CHECK(response->status == 200);
  CHECK(response->body == "MIRRORED");
  CHECK(s.home.authorizations("/image.raw") == std::vector<std::string>{s.auth});
  CHECK(s.other.authorizations("/mirror/image.raw") == std::vector<std::string>{""});

  // A host that wants them gets none: its 401 is the answer.
  auto refused = client->send(follow(s.home.url("/guarded.raw")));
  REQUIRE(refused);
  CHECK(refused->status == 401);
  CHECK(s.other.authorizations("/guarded.raw") == std::vector<std::string>{""});

  // An Authorization header the caller set goes the same way.
  HttpRequest explicitHeader = follow(s.home.url("/image.raw"));
  explicitHeader.basicAuth.reset();
  explicitHeader.headers = {{"Authorization", "Bearer t0ken"}, {"Cookie", "session=1"}};
  REQUIRE(client->send(explicitHeader));
  CHECK(s.home.authorizations("/image.raw").back() == "Bearer t0ken");
  CHECK(s.other.authorizations("/mirror/image.raw").back() == "");
}

TEST_CASE("HttpClient treats another port of the same host as another origin",
          "[shared][http][redirect][credentials]") {
  Servers s;
  s.home.serve("/image.raw", redirect(s.sidePort.url("/image.raw"), 308));
  s.sidePort.serve("/image.raw", body("SIDE"));
  auto response = makeHttpClient()->send(follow(s.home.url("/image.raw")));
  REQUIRE(response);
  CHECK(response->body == "SIDE");
  CHECK(s.sidePort.authorizations("/image.raw") == std::vector<std::string>{""});
}

TEST_CASE("HttpClient does not give the credentials back when a chain returns to their origin",
          "[shared][http][redirect][credentials]") {
  Servers s;
  s.home.serve("/start", redirect(s.other.url("/bounce")));
  s.other.serve("/bounce", redirect(s.home.url("/final")));
  s.home.serve("/final", body("FINAL"));
  auto response = makeHttpClient()->send(follow(s.home.url("/start")));
  REQUIRE(response);
  CHECK(response->body == "FINAL");
  CHECK(s.home.authorizations("/start") == std::vector<std::string>{s.auth});
  CHECK(s.other.authorizations("/bounce") == std::vector<std::string>{""});
  CHECK(s.home.authorizations("/final") == std::vector<std::string>{""});
}

TEST_CASE("HttpClient returns a 3xx as it is unless asked to follow redirects",
          "[shared][http][redirect]") {
  Servers s;
  s.home.serve("/moved", redirect(s.other.url("/elsewhere")));
  auto response = makeHttpClient()->send(follow(s.home.url("/moved"), 0));
  REQUIRE(response);
  CHECK(response->status == 302);
  CHECK(response->header("location") == s.other.url("/elsewhere"));
  CHECK(s.other.getCount("/elsewhere") == 0);
}

TEST_CASE("HttpClient gives up after maxRedirects and on a Location it cannot follow",
          "[shared][http][redirect]") {
  Servers s;
  s.home.serve("/loop", redirect("/loop"));
  s.home.serve("/ftp", redirect("ftp://files.example/image.raw"));
  s.home.serve("/userinfo", redirect("http://mallory:x@127.0.0.2/image.raw"));
  auto client = makeHttpClient();

  auto looped = client->send(follow(s.home.url("/loop"), 3));
  REQUIRE_FALSE(looped);
  CHECK(looped.error().code == ErrorCode::Unavailable);
  CHECK_THAT(looped.error().message, Catch::Contains("more than 3 redirects"));
  CHECK(s.home.getCount("/loop") == 4);

  for (const char* path : {"/ftp", "/userinfo"}) {
    INFO(path);
    auto r = client->send(follow(s.home.url(path)));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::Unavailable);
    CHECK_THAT(r.error().message, Catch::Contains("cannot follow the redirect"));
    CHECK_THAT(r.error().message, !Catch::Contains("mallory:x"));
  }
}

TEST_CASE("HttpClient turns a POST into a GET at a 303 and repeats it at a 307",
          "[shared][http][redirect]") {
  Servers s;
  s.home.serve("/see-other", redirect("/result", 303));
  s.home.serve("/temporary", redirect("/result", 307));
  s.home.serve("/result", body("R"));
  auto client = makeHttpClient();
  HttpRequest post = follow(s.home.url("/see-other"));
  post.method = "POST";
  post.body = "{}";
  REQUIRE(client->send(post));
  post.url = s.home.url("/temporary");
  auto repeated = client->send(post);
  REQUIRE(repeated);
  CHECK(repeated->status == 200);
  CHECK(s.home.methods("/see-other") == std::vector<std::string>{"POST"});
  CHECK(s.home.methods("/temporary") == std::vector<std::string>{"POST"});
  CHECK(s.home.methods("/result") == std::vector<std::string>{"GET", "POST"});
}
