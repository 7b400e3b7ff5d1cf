#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/model/node.h"
#include "server/model/resources.h"

using namespace kiln::server;
using J = nlohmann::json;

TEST_CASE("valueFromJson checks types and lengths per field", "[server][model]") {
  const Schema& s = nodeSchema();
  const auto& name = s[kNodeName];
  CHECK(valueFromJson(J("node-1"), name)->s == "node-1");
  CHECK(valueFromJson(J(nullptr), name)->isNull());
  CHECK_FALSE(valueFromJson(J(5), name));
  CHECK_FALSE(valueFromJson(J(std::string(256, 'a')), name));

  const auto& maint = s[kNodeMaintenance];
  CHECK(valueFromJson(J(true), maint)->b);
  CHECK_FALSE(valueFromJson(J("false"), maint)->b);
  CHECK(valueFromJson(J("True"), maint)->b);
  CHECK_FALSE(valueFromJson(J("maybe"), maint));
  CHECK_FALSE(valueFromJson(J(1), maint));

  const auto& info = s[kNodeDriverInfo];
  CHECK(valueFromJson(J::parse(R"({"a":1})"), info)->s == R"({"a":1})");
  CHECK(valueFromJson(J(nullptr), info)->s == "{}");
  CHECK_FALSE(valueFromJson(J::array(), info));
  CHECK_FALSE(valueFromJson(J("x"), info));
}

TEST_CASE("visibleFields hides fields newer than the microversion", "[server][model]") {
  const Schema& s = nodeSchema();
  const auto v1 = visibleFields(s, 1);
  CHECK(v1.test(kNodeUuid));
  CHECK_FALSE(v1.test(kNodeName));
  CHECK_FALSE(v1.test(kNodeTraits));
  CHECK_FALSE(v1.test(kNodeId));
  const auto v78 = visibleFields(s, 78);
  CHECK(v78.test(kNodeName));
  CHECK(v78.test(kNodeTraits));
  CHECK(v78.test(kNodeBootMode));
  CHECK(v78.test(kNodeLessee));
}

TEST_CASE("selectFields rejects unknown fields (400) and newer ones (406)", "[server][model]") {
  const Schema& s = nodeSchema();
  auto ok = selectFields(s, 78, {"uuid", "traits"});
  REQUIRE(ok);
  CHECK(ok->test(kNodeTraits));
  auto unknown = selectFields(s, 78, {"uuid", "bogus"});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == kiln::ErrorCode::InvalidArgument);
  auto links = selectFields(s, 78, {"ports"});
  CHECK_FALSE(links);
  auto tooNew = selectFields(s, 36, {"traits"});
  REQUIRE_FALSE(tooNew);
  CHECK(tooNew.error().code == kiln::ErrorCode::NotAcceptable);
}

TEST_CASE("node names follow Ironic's logical-name rule", "[server][model]") {
  CHECK(validateNodeName("node-1.rack_2~a"));
  CHECK_FALSE(validateNodeName(""));
  CHECK_FALSE(validateNodeName("has space"));
  CHECK_FALSE(validateNodeName("slash/name"));
  CHECK_FALSE(validateNodeName("8221f906-208b-44a5-b575-f8e8a59c4a84"));
  CHECK_FALSE(validateNodeName("detail"));
  CHECK_FALSE(validateNodeName(std::string(256, 'a')));
}

TEST_CASE("maskSecrets hides password-like keys at any depth", "[server][model]") {
  const auto masked = J::parse(maskSecrets(
      R"({"ipmi_address":"10.0.0.1","ipmi_password":"s3cret","nested":{"Redfish_Password":"x","ok":1},"agent_secret_token":"t"})"));
  CHECK(masked["ipmi_address"] == "10.0.0.1");
  CHECK(masked["ipmi_password"] == "******");
  CHECK(masked["nested"]["Redfish_Password"] == "******");
  CHECK(masked["nested"]["ok"] == 1);
  CHECK(masked["agent_secret_token"] == "******");
  const std::string plain = R"({"a":1})";
  CHECK(maskSecrets(plain) == plain);
  const auto inst = J::parse(maskInstanceInfo(R"({"image_url":"http://x/y","configdrive":"abc","root_gb":10})"));
  CHECK(inst["image_url"] == "******");
  CHECK(inst["configdrive"] == "******");
  CHECK(inst["root_gb"] == 10);
}

TEST_CASE("every resource schema starts with id and uuid", "[server][model]") {
  for (auto r : {Resource::Node, Resource::Port, Resource::Portgroup, Resource::Chassis,
                 Resource::DeployTemplate, Resource::Allocation, Resource::VolumeConnector,
                 Resource::VolumeTarget}) {
    const Schema& s = schemaOf(r);
    CHECK(s[0].name == "id");
    CHECK(s[1].name == "uuid");
  }
}
