// File: server/api/errors.h
//
// Ironic's error bodies. The API's errors are double-encoded: the body is
//   {"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"...\", \"debuginfo\": null}"}
// (a JSON string holding JSON; python-ironicclient json.loads() it). The http_basic
// middleware's own 400/401 use {"error": {"message": "...", "code": 401}} instead.
#pragma once

#include "server/api/http.h"
#include "shared/core/error.h"

namespace kiln::server {

/// An error response in the API's double-encoded format; the status comes from the code.
ApiResponse errorResponse(const Error& error);

/// An error response in the http_basic middleware's format, with WWW-Authenticate on 401.
ApiResponse authErrorResponse(int status, const std::string& message);

}  // namespace kiln::server
