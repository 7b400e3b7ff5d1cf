// File: shared/core/error.h
//
// Kiln's error model (house-style rule 11). Anything that can fail returns kiln::Result<T>, an
// alias for std::expected<T, kiln::Error>. An Error carries one canonical ErrorCode, which maps
// mechanically onto an HTTP status, and a human-readable message that is safe to show to the
// client (it becomes Ironic's `faultstring`).
//
// Where callers must tell one failure from another of the same code (a locked node from any
// other conflict, a unique violation's column), the error carries a Reason, and the column or
// other subject it concerns, set where the error is made. Callers test `is(Reason)`; nothing
// recognises an error by its text.
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

/// What an error is, where callers act on it (the code alone says only the HTTP status).
enum class Reason {
  None,             ///< nothing more than the code
  NodeLocked,       ///< another operation holds the node (Ironic's NodeLocked); Conflict
  TakenOver,        ///< another conductor took the node over while this one worked; Conflict
  Unsupported,      ///< the driver interface does not offer the feature; Unimplemented or 400
  UniqueViolation,  ///< a unique column already holds the value; `subject` is the column
  DatabaseBusy,     ///< a deadlock, serialization failure or lock timeout; try again
  TlsHandshake,     ///< an outbound HTTPS connection failed in its TLS handshake
};

/// An error value: a canonical code plus a message for humans, and, where callers act on it,
/// the reason and its subject (see the file comment).
struct Error {
  Error() = default;
  Error(ErrorCode c, std::string m, Reason r = Reason::None, std::string s = {})
      : code(c), message(std::move(m)), reason(r), subject(std::move(s)) {}

  ErrorCode code = ErrorCode::Internal;
  std::string message;
  Reason reason = Reason::None;
  std::string subject;  ///< the unique column of a UniqueViolation; otherwise ""

  bool is(Reason r) const { return reason == r; }
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

/// An error with its reason (and subject).
inline std::unexpected<Error> fail(ErrorCode code, Reason reason, std::string message,
                                   std::string subject = {}) {
  return std::unexpected<Error>(Error{code, std::move(message), reason, std::move(subject)});
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
