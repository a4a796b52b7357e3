// Errors cross library boundaries as values, never as C++ exceptions.
#pragma once

#include <string>
#include <utility>

namespace edgert {

// Values equal the C API's edgert_status codes (edgert.h).
enum class Code : int {
  Ok = 0,
  InvalidProgram = 1,
  InvalidArgument = 2,
  NotFound = 3,
  Unsupported = 4,
  Internal = 5,
  Unavailable = 6,
  OutOfMemory = 7,
};

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status success() { return {}; }
  bool ok() const { return code_ == Code::Ok; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::Ok;
  std::string message_;
};

}  // namespace edgert

#define EDGERT_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::edgert::Status edgert_status_ = (expr);        \
    if (!edgert_status_.ok()) return edgert_status_; \
  } while (0)
