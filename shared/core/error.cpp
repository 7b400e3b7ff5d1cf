#include "shared/core/error.h"

namespace kiln {

std::string_view toString(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::Unauthenticated: return "Unauthenticated";
    case ErrorCode::PermissionDenied: return "PermissionDenied";
    case ErrorCode::NotFound: return "NotFound";
    case ErrorCode::MethodNotAllowed: return "MethodNotAllowed";
    case ErrorCode::NotAcceptable: return "NotAcceptable";
    case ErrorCode::AlreadyExists: return "AlreadyExists";
    case ErrorCode::Conflict: return "Conflict";
    case ErrorCode::Internal: return "Internal";
    case ErrorCode::Unimplemented: return "Unimplemented";
    case ErrorCode::Unavailable: return "Unavailable";
    case ErrorCode::DeadlineExceeded: return "DeadlineExceeded";
  }
  return "Unknown";
}

int httpStatus(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return 400;
    case ErrorCode::Unauthenticated: return 401;
    case ErrorCode::PermissionDenied: return 403;
    case ErrorCode::NotFound: return 404;
    case ErrorCode::MethodNotAllowed: return 405;
    case ErrorCode::NotAcceptable: return 406;
    case ErrorCode::AlreadyExists: return 409;
    case ErrorCode::Conflict: return 409;
    case ErrorCode::Internal: return 500;
    case ErrorCode::Unimplemented: return 501;
    case ErrorCode::Unavailable: return 503;
    case ErrorCode::DeadlineExceeded: return 504;
  }
  return 500;
}

}  // namespace kiln
