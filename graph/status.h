#pragma once
// One error model for everything that can fail on input: Status and StatusOr<T>.

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace rewire {

enum class StatusCode {
  kOk,
  kInvalidArgument,
  kNotFound,
  kUnimplemented,
  kDataLoss,
  kInternal,
  kDeadlineExceeded,   // a wait ran out: a send, a reply, a collective, a file that never came
  kUnavailable,        // a peer is gone or cannot be reached (connection closed or refused)
  kResourceExhausted,  // a budget is spent (e.g. the measurements a cost model may make)
};

/// "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", ...: the code's name for messages.
const char* StatusCodeName(StatusCode code);

/// The outcome of an operation that can fail on input: ok, or a code and a one-line message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Returns a copy whose message is prefixed with `context: `.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status Unimplemented(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status DataLoss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status DeadlineExceeded(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
inline Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
inline Status ResourceExhausted(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}

namespace detail {
/// Prints "<what> on a failed StatusOr [at file:line]: CODE: message" to stderr and aborts.
/// `file` may be null (no location known).
[[noreturn]] void StatusOrAccessFailed(const char* what, const Status& status, const char* file,
                                       int line);
}  // namespace detail

/// A value or the Status that explains why there is none; never both. Reading the value of a
/// failed StatusOr (value(), *, ->) is a bug in the caller: it aborts with the status message,
/// in every build type. value() reports the caller's file:line.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("StatusOr constructed from an ok Status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const& {
    Check("value()", file, line);
    return *value_;
  }
  T& value(const char* file = __builtin_FILE(), int line = __builtin_LINE()) & {
    Check("value()", file, line);
    return *value_;
  }
  T&& value(const char* file = __builtin_FILE(), int line = __builtin_LINE()) && {
    Check("value()", file, line);
    return std::move(*value_);
  }
  const T& operator*() const& {
    Check("operator*", nullptr, 0);
    return *value_;
  }
  T& operator*() & {
    Check("operator*", nullptr, 0);
    return *value_;
  }
  const T* operator->() const {
    Check("operator->", nullptr, 0);
    return &*value_;
  }
  T* operator->() {
    Check("operator->", nullptr, 0);
    return &*value_;
  }

 private:
  void Check(const char* what, const char* file, int line) const {
    if (!value_.has_value()) detail::StatusOrAccessFailed(what, status_, file, line);
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace rewire

#define REWIRE_CONCAT_INNER(a, b) a##b
#define REWIRE_CONCAT(a, b) REWIRE_CONCAT_INNER(a, b)

/// Returns the Status from the enclosing function when `expr` is not ok.
#define REWIRE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::rewire::Status _rewire_status = (expr);        \
    if (!_rewire_status.ok()) return _rewire_status; \
  } while (0)

/// `REWIRE_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the Status.
#define REWIRE_ASSIGN_OR_RETURN(lhs, expr) \
  REWIRE_ASSIGN_OR_RETURN_IMPL(REWIRE_CONCAT(_rewire_statusor_, __LINE__), lhs, expr)
#define REWIRE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

/// Checks an internal invariant; stays on in release builds. Never for validating input.
#define REWIRE_CHECK(cond)                                                 \
  do {                                                                     \
    if (!(cond)) ::rewire::detail::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)

namespace rewire::detail {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}
