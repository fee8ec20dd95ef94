#include "graph/status.h"

#include <cstdio>
#include <cstdlib>

namespace rewire {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
  }
  return "UNKNOWN";
}

namespace detail {

void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "rewire: internal check failed: %s at %s:%d\n", cond, file, line);
  std::abort();
}

void StatusOrAccessFailed(const char* what, const Status& status, const char* file, int line) {
  if (file != nullptr) {
    std::fprintf(stderr, "rewire: StatusOr::%s on an error at %s:%d: %s: %s\n", what, file, line,
                 StatusCodeName(status.code()), status.message().c_str());
  } else {
    std::fprintf(stderr, "rewire: StatusOr::%s on an error: %s: %s\n", what,
                 StatusCodeName(status.code()), status.message().c_str());
  }
  std::fflush(stderr);
  std::abort();
}

}  // namespace detail
}  // namespace rewire
