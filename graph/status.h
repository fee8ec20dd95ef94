#pragma once
// One error model for everything that can fail on input: Status and StatusOr<T>.

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace rewire {

enum class StatusCode { kOk, kInvalidArgument, kNotFound, kUnimplemented, kDataLoss, kInternal };

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

inline Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
inline Status DataLoss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

/// A value or the Status that explains why there is none; never both.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("StatusOr constructed from an ok Status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace rewire

#define REWIRE_CONCAT_INNER(a, b) a##b
#define REWIRE_CONCAT(a, b) REWIRE_CONCAT_INNER(a, b)

/// Returns the Status from the enclosing function when `expr` is not ok.
#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    ::rewire::Status _rewire_status = (expr);       \
    if (!_rewire_status.ok()) return _rewire_status; \
  } while (0)

/// `ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the Status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(REWIRE_CONCAT(_rewire_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

/// Checks an internal invariant; stays on in release builds. Never for validating input.
#define REWIRE_CHECK(cond)                                                          \
  do {                                                                              \
    if (!(cond)) ::rewire::detail::CheckFailed(#cond, __FILE__, __LINE__);          \
  } while (0)

namespace rewire::detail {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}
