// File: shared/core/error.h
//
// Kiln's error model (house-style rule 11). Anything that can fail returns kiln::Result<T>, an
// alias for std::expected<T, kiln::Error>. An Error carries one canonical ErrorCode, which maps
// mechanically onto an HTTP status, and a human-readable message that is safe to show to the
// client (it becomes Ironic's `faultstring`).
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace kiln {

/// Canonical error codes. Each maps to exactly one HTTP status (see httpStatus()).
enum class ErrorCode {
  InvalidArgument,     ///< 400: the client sent something invalid.
  Unauthenticated,     ///< 401: no or wrong credentials.
  PermissionDenied,    ///< 403: credentials fine, action not allowed (policy, protected node).
  NotFound,            ///< 404: the resource (or the endpoint at this version) does not exist.
  MethodNotAllowed,    ///< 405: the endpoint exists but not with this method (at this version).
  NotAcceptable,       ///< 406: microversion out of range, or a field newer than the version.
  AlreadyExists,       ///< 409: unique constraint (name, MAC, UUID).
  Conflict,            ///< 409: wrong state for the action, node locked.
  Internal,            ///< 500: a broken invariant or an unexpected environment failure.
  Unimplemented,       ///< 501: a feature Kiln does not provide.
  Unavailable,         ///< 503: a dependency is temporarily unavailable.
  DeadlineExceeded,    ///< 504: a bounded operation ran out of time.
};

/// An error value: a canonical code plus a message for humans.
struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
};

template <typename T>
using Result = std::expected<T, Error>;

/// Short name of a code ("InvalidArgument"), for logs.
std::string_view toString(ErrorCode code);

/// The HTTP status code for an error code.
int httpStatus(ErrorCode code);

/// Convenience constructor: `return fail(ErrorCode::NotFound, "Node x could not be found.");`
inline std::unexpected<Error> fail(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}

/// Shorthands for the common codes.
inline std::unexpected<Error> invalid(std::string message) {
  return fail(ErrorCode::InvalidArgument, std::move(message));
}
inline std::unexpected<Error> notFound(std::string message) {
  return fail(ErrorCode::NotFound, std::move(message));
}
inline std::unexpected<Error> conflict(std::string message) {
  return fail(ErrorCode::Conflict, std::move(message));
}
inline std::unexpected<Error> internalError(std::string message) {
  return fail(ErrorCode::Internal, std::move(message));
}

}  // namespace kiln

/// Evaluates a Result-returning expression; on error returns the error from the enclosing
/// function, otherwise yields the value. Uses a GNU statement expression (GCC and Clang).
#define KILN_TRY(expr)                                              \
  ({                                                                \
    auto&& kiln_try_result_ = (expr);                               \
    if (!kiln_try_result_) {                                        \
      return std::unexpected<::kiln::Error>(kiln_try_result_.error()); \
    }                                                               \
    std::move(*kiln_try_result_);                                   \
  })

/// Like KILN_TRY for Result<void>.
#define KILN_TRY_VOID(expr)                                         \
  do {                                                              \
    auto&& kiln_try_result_ = (expr);                               \
    if (!kiln_try_result_) {                                        \
      return std::unexpected<::kiln::Error>(kiln_try_result_.error()); \
    }                                                               \
  } while (0)
