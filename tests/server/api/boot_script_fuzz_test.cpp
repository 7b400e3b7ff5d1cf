// Regressions found by the json_body and http_request fuzzers (docs/fuzzing.md); their inputs
// are in tests/fuzz/regressions/json_body/ and tests/fuzz/regressions/http_request/.
#include <catch2/catch.hpp>

#include <string>

#include "server/api/http.h"
#include "tests/support/test_api.h"

using kiln::test::TestApi;

namespace {

kiln::server::ApiResponse chainWithHost(TestApi& api, const std::string& host) {
  kiln::server::ApiRequest request;
  request.method = "GET";
  request.path = "/boot.ipxe";
  request.headers = {{"host", host}};
  return api.app().api().handle(request);
}

}  // namespace

TEST_CASE("boot scripts name the configured address when the Host header is no URL authority",
          "[server][netboot][fuzz]") {
  // The fuzzers' find: the Host header went into the iPXE script as it came, bytes that are
  // not UTF-8, spaces and '$' included.
  TestApi api("[api]\nhost_ip = 192.0.2.7\nport = 6385\n");
  for (const std::string host : {"kiln.\xff\xfe", "a b", "x/${mac}", "k\xc3\xa9", "evil || shell"}) {
    CAPTURE(host);
    const auto chain = chainWithHost(api, host);
    REQUIRE(chain.status == 200);
    CHECK_THAT(chain.body, Catch::Contains("chain http://192.0.2.7:6385/boot/${mac:hexhyp}.ipxe"));
  }
  for (const std::string host : {"kiln.example:6385", "10.0.2.2", "[fd00::1]:6385", "kiln_1.lan"}) {
    CAPTURE(host);
    CHECK_THAT(chainWithHost(api, host).body, Catch::Contains("chain http://" + host + "/boot/"));
  }
}
