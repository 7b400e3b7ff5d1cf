#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "shared/core/log.h"
#include "shared/core/secrets.h"
#include "tests/support/log_capture.h"

using namespace kiln;
using J = nlohmann::json;

TEST_CASE("isSecretKey matches oslo's key fragments anywhere in the key, in any case",
          "[shared][secrets]") {
  for (const char* key : {"password", "ipmi_password", "Redfish_Password", "BMC_PASSWORD", "secret",
                          "agent_secret_token", "token", "auth_token", "adminPass", "configdrive",
                          "private_key", "ssh_passphrase", "sslkey_file", "cephmonkey",
                          "encrypted_key", "image_url", "my_image_url"}) {
    INFO(key);
    CHECK(isSecretKey(key));
  }
  for (const char* key : {"ipmi_address", "ipmi_username", "image_source", "deploy_kernel",
                          "settings", "name", "value", "pass", "key"}) {
    INFO(key);
    CHECK_FALSE(isSecretKey(key));
  }
}

TEST_CASE("maskJson masks every non-null value under a password-like key, whatever its type",
          "[shared][secrets]") {
  J doc = J::parse(R"({
    "ipmi_address": "10.0.0.1",
    "ipmi_password": "pw1",
    "pin_token": 1234,
    "bmc_secret": ["pw2", "pw3"],
    "Redfish_Password": {"value": "pw4", "old": ["pw5"]},
    "empty_password": null,
    "flag_secret": false,
    "nested": {"port": 623, "users": [{"name": "u", "password": "pw6"}, [{"token": {"a": "pw7"}}]]},
    "list": [1, "two", {"passphrase": "pw8"}]
  })");
  const J original = doc;
  maskJson(doc);
  CHECK(doc["ipmi_address"] == "10.0.0.1");
  CHECK(doc["ipmi_password"] == "******");
  CHECK(doc["pin_token"] == "******");
  CHECK(doc["bmc_secret"] == "******");
  CHECK(doc["Redfish_Password"] == "******");
  CHECK(doc["empty_password"].is_null());
  CHECK(doc["flag_secret"] == "******");
  CHECK(doc["nested"]["port"] == 623);
  CHECK(doc["nested"]["users"][0] == J{{"name", "u"}, {"password", "******"}});
  CHECK(doc["nested"]["users"][1][0]["token"] == "******");
  CHECK(doc["list"] == J::parse(R"([1, "two", {"passphrase": "******"}])"));
  CHECK(doc.dump().find("pw") == std::string::npos);
  // maskedJson, maskedRepr and maskedDump leave their argument alone.
  CHECK(maskedJson(original) == doc);
  CHECK(maskedRepr(original).find("pw") == std::string::npos);
  CHECK(maskedDump(original) == doc.dump());
  CHECK(original["ipmi_password"] == "pw1");
  CHECK(maskedRepr(J{{"a", {{"password", "x"}}}}) == "{'a': {'password': '******'}}");
}

TEST_CASE("maskJson does not recurse: hostile nesting cannot overflow the stack",
          "[shared][secrets]") {
  constexpr int kDepth = 200000;  // far beyond what a recursive walk survives on an 8 MiB stack
  J doc = J::object();
  J* cur = &doc;
  for (int i = 0; i < kDepth; ++i) {
    J& next = (*cur)[i % 2 ? "list" : "obj"];
    next = i % 2 ? J::array({J::object()}) : J::object();
    cur = next.is_array() ? &next[0] : &next;
  }
  (*cur)["password"] = "deep-secret";
  (*cur)["url"] = "http://u:deep-pw@h/x";
  maskJson(doc);
  cur = &doc;
  for (int i = 0; i < kDepth; ++i) {
    J& next = (*cur)[i % 2 ? "list" : "obj"];
    cur = next.is_array() ? &next[0] : &next;
  }
  CHECK((*cur)["password"] == "******");
  CHECK((*cur)["url"] == "http://h/******");
}

TEST_CASE("maskUrl shows only the scheme and host of a URL", "[shared][secrets]") {
  CHECK(maskUrl("http://images.example/disk.img") == "http://images.example/******");
  CHECK(
      maskUrl(
          "https://images.example:8443/v1/AUTH_x/c/disk.img?temp_url_sig=abc&temp_url_expires=1") ==
      "https://images.example:8443/******");
  CHECK(maskUrl("http://user:pw@images.example") == "http://images.example/******");
  CHECK(maskUrl("http://user:pw@[fd00::1]:8080/x") == "http://[fd00::1]:8080/******");
  CHECK(maskUrl("http://images.example") == "http://images.example");
  CHECK(maskUrl("http://images.example/") == "http://images.example/");
  CHECK(maskUrl("http://images.example?sig=abc") == "http://images.example/******");
  CHECK(maskUrl("http://user:pa/ss@images.example/x") == "http://******");
  CHECK(maskUrl("http://user:pa?ss@images.example/x") == "http://******");
  CHECK(maskUrl("http://user:pa#ss@images.example") == "http://******");
  CHECK(maskUrl("http://images.example/x?mail=a@b") == "http://******");
  CHECK(maskUrl("file:///var/lib/images/disk.img") == "file:///******");
  CHECK(maskUrl("not a url") == "******");
  CHECK(maskUrl("user:pw@host/x") == "******");
  CHECK(maskUrl("") == "******");
}

TEST_CASE("maskUrlsInText masks URLs with userinfo, or every URL, inside free text",
          "[shared][secrets]") {
  const std::string text =
      "Cannot download image from http://u:pw1@img.example/a.raw?sig=s1: HTTP 404; mirror "
      "'https://mirror.example/b.raw?temp_url_sig=s2', see https://docs.example/help.";
  CHECK(maskUrlsInText(text) ==
        "Cannot download image from http://img.example/******: HTTP 404; mirror "
        "'https://mirror.example/b.raw?temp_url_sig=s2', see https://docs.example/help.");
  CHECK(maskUrlsInText(text, UrlScope::All) ==
        "Cannot download image from http://img.example/******: HTTP 404; mirror "
        "'https://mirror.example/******', see https://docs.example/******.");
  CHECK(maskUrlsInText("{\"url\": \"ftp://a:pw@h/x\"}") == "{\"url\": \"ftp://h/******\"}");
  CHECK(maskUrlsInText("(redfish+https://root:pw@bmc:8000)") ==
        "(redfish+https://bmc:8000/******)");
  CHECK(maskUrlsInText("no urls, just user@example.com") == "no urls, just user@example.com");
  CHECK(maskUrlsInText("a path http://h/~user@x/y") == "a path http://******");
  CHECK(maskUrlsInText("at http://u:p?w@h/x now") == "at http://****** now");
  CHECK(maskUrlsInText("") == "");
}

TEST_CASE("mayContainSecret is false only when nothing can need masking", "[shared][secrets]") {
  CHECK_FALSE(mayContainSecret(R"({"ipmi_address": "10.0.0.1", "url": "http://h/x"})"));
  CHECK(mayContainSecret(R"({"IPMI_PASSWORD": "x"})"));
  CHECK(mayContainSecret(R"({"a": "http://u:p@h/x"})"));
}

TEST_CASE("log lines mask password-like fields and URLs with userinfo", "[shared][secrets][log]") {
  test::LogCapture capture(LogLevel::Debug);
  Logger("test")
      .with("redfish_password", "pw-context")
      .info("fetching http://admin:pw-message@bmc.example/redfish/v1",
            {{"ipmi_password", "pw-field"},
             {"token", "pw-token"},
             {"url", "https://u:pw-value@images.example/disk?sig=1"},
             {"image", "https://images.example/disk.img"},
             {"node", "n1"}});
  const std::string line = capture.text();
  CHECK(line.find("pw-") == std::string::npos);
  CHECK_THAT(line, Catch::Contains("test: fetching http://bmc.example/****** "));
  CHECK_THAT(line, Catch::Contains(" redfish_password=****** "));
  CHECK_THAT(line, Catch::Contains(" ipmi_password=****** token=****** "));
  CHECK_THAT(line, Catch::Contains(" url=https://images.example/****** "));
  CHECK_THAT(line, Catch::Contains(" image=https://images.example/disk.img node=n1\n"));
}

TEST_CASE("log lines escape control characters, so a client cannot forge a line",
          "[shared][log]") {
  kiln::test::LogCapture capture;
  kiln::Logger("api").info("bad request\nFAKE ERROR kiln: owned", {{"path", "/v1/x\r\n2026 ERROR"}});
  const std::string text = capture.text();
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK_THAT(text, Catch::Contains("bad request\\nFAKE ERROR") && Catch::Contains("/v1/x\\r\\n2026"));
}
