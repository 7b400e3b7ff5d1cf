// File: server/api/router.h
//
// The route table (house-style: all routes in one place, see api_service.cpp). A route is a
// method plus a path pattern of literal segments and `{param}` segments, with the metadata the
// dispatcher enforces before calling the handler: the microversion that introduced it, whether
// it is public (no authentication), and the policy action a write needs.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/http.h"
#include "server/config.h"
#include "shared/core/error.h"

namespace kiln::server {

/// Everything a handler needs to know about the request.
struct RequestContext {
  const ApiRequest& request;
  std::vector<std::string> params;  ///< decoded `{param}` segments, in order
  int version = 1;                  ///< negotiated minor version
  std::string baseUrl;              ///< "http://127.0.0.1:6385" (no trailing slash)
  std::string user;
  Role role = Role::Admin;

  bool atLeast(int minor) const { return version >= minor; }
  const std::string& param(size_t i) const { return params.at(i); }
};

using Handler = std::function<Result<ApiResponse>(RequestContext&)>;

struct Route {
  std::string method;
  std::string pattern;  ///< "/v1/nodes/{node}/traits"
  Handler handler;
  int since = 1;            ///< minimum microversion
  int belowVersionStatus = 404;  ///< 404 (or 405) when the version is too low
  std::string belowVersionMessage;
  bool isPublic = false;    ///< no authentication, no policy
  std::string policy;       ///< e.g. "baremetal:node:create"; non-empty = a write
};

class Router {
 public:
  void add(Route route);

  struct Match {
    const Route* route = nullptr;       ///< the matched route, if the method matched
    std::vector<std::string> params;
    bool pathMatched = false;           ///< some route has this path (405 if no method)
    std::vector<std::string> allowed;   ///< methods allowed on the path
  };

  /// For every route "/v1/nodes/{node}/<suffix>" with a suffix in `suffixes`, adds the same
  /// route as "/v1/nodes/<suffix>/{node}": Ironic's Pecan controllers also take the node's
  /// identity as the last segment of their sub-resources (GET /v1/nodes/states/console/{id}).
  void addNodeLastAliases(std::initializer_list<std::string_view> suffixes);

  /// Finds the route for a method and normalised segments ("v1", "nodes", "abc").
  Match match(std::string_view method, const std::vector<std::string>& segments) const;

  /// Every route, in the order added (addresses stay valid until the next add()).
  std::vector<const Route*> routes() const;

 private:
  struct Entry {
    Route route;
    std::vector<std::string> segments;  ///< "{}" marks a parameter
  };
  std::vector<Entry> routes_;
};

/// Splits a raw path into decoded segments; empty segments are dropped, and a path that does
/// not start with "v1" is re-rooted under it as Ironic does (except "/" itself).
std::vector<std::string> normalizePath(std::string_view rawPath);

}  // namespace kiln::server
