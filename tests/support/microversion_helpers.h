// File: tests/support/microversion_helpers.h
//
// Small helpers shared by the per-microversion API tests
// (tests/server/api/microversions_*_test.cpp): version strings from the named constants of
// server/model/versions.h, nodes in a given state, ports, port groups and the step bodies those
// tests send.
#pragma once

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "server/api/version.h"
#include "server/model/versions.h"
#include "tests/support/test_api.h"

namespace kiln::test::mv {

/// "1.N" for a microversion named in server/model/versions.h (e.g. v(ver::k82NodeShard)).
inline std::string v(int minor) { return server::versionString(minor); }

/// GET /v1/nodes/{ident} as JSON.
inline Json node(TestApi& api, const std::string& ident) {
  return api.get("/v1/nodes/" + ident).json();
}

/// A JSON value as text ("" for anything that is not a string, null included).
inline std::string text(const Json& value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}

/// One JSON PATCH operation.
inline Json op(const std::string& o, const std::string& path, Json value = nullptr) {
  Json j = {{"op", o}, {"path", path}};
  if (o != "remove") j["value"] = std::move(value);
  return j;
}

/// The keys of a JSON object.
inline std::set<std::string> keysOf(const Json& object) {
  std::set<std::string> out;
  for (auto it = object.begin(); it != object.end(); ++it) out.insert(it.key());
  return out;
}

/// A fake-hardware node named `name` (plus `extra`), managed: REQUIREs "manageable".
inline Json manageableNode(TestApi& api, const std::string& name, Json extra = Json::object()) {
  extra["name"] = name;
  Json n = api.createNode(std::move(extra));
  Response r = api.provision(name, "manage");
  INFO(r.body);
  REQUIRE(r.status == 202);
  REQUIRE(node(api, name)["provision_state"] == "manageable");
  return n;
}

/// manageableNode, then provided: REQUIREs "available".
inline Json availableNode(TestApi& api, const std::string& name, Json extra = Json::object()) {
  Json n = manageableNode(api, name, std::move(extra));
  Response r = api.provision(name, "provide");
  INFO(r.body);
  REQUIRE(r.status == 202);
  REQUIRE(node(api, name)["provision_state"] == "available");
  return n;
}

/// POST /v1/ports for `nodeUuid` with `mac` (plus `extra`); REQUIREs 201 and returns the port.
inline Json createPort(TestApi& api, const std::string& nodeUuid, const std::string& mac,
                       Json extra = Json::object()) {
  extra["address"] = mac;
  extra["node_uuid"] = nodeUuid;
  Response r = api.post("/v1/ports", extra);
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json();
}

/// POST /v1/portgroups for `nodeUuid` named `name` (plus `extra`); REQUIREs 201.
inline Json createPortgroup(TestApi& api, const std::string& nodeUuid, const std::string& name,
                            Json extra = Json::object()) {
  extra["name"] = name;
  extra["node_uuid"] = nodeUuid;
  Response r = api.post("/v1/portgroups", extra);
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json();
}

/// The step bios.apply_configuration setting `name` to `value` (clean, service or runbook step
/// without an order or priority).
inline Json biosStep(const std::string& name, const std::string& value) {
  return {{"interface", "bios"},
          {"step", "apply_configuration"},
          {"args", {{"settings", Json::array({{{"name", name}, {"value", value}}})}}}};
}

/// The reserved step deploy.hold (1.85).
inline Json holdStep() { return {{"interface", "deploy"}, {"step", "hold"}}; }

/// The reserved step deploy.wait for `seconds`.
inline Json waitStep(int seconds) {
  return {{"interface", "deploy"}, {"step", "wait"}, {"args", {{"seconds", seconds}}}};
}

/// The cached value of the BIOS setting `name` of a node ("" when it has none).
inline std::string biosValue(TestApi& api, const std::string& ident, const std::string& name) {
  const Json list = api.get("/v1/nodes/" + ident + "/bios").json();
  if (!list.is_object() || !list.contains("bios")) return "";
  for (const auto& s : list["bios"]) {
    if (s.value("name", "") == name) return text(s.value("value", Json()));
  }
  return "";
}

}  // namespace kiln::test::mv
