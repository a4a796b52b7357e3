// What a catch (...) handler caught, by the exception's type name.
//
// Where each library carries its own static copy of the C++ runtime (the macOS and Windows
// builds made with zig: docs/macos.md, "C++ exceptions between the libraries"), each copy has
// its own std::bad_alloc and std::length_error type_info. A handler for std::bad_alloc in
// this library then does not match one thrown by another library's copy (a kernel's
// allocation), nor does std::exception: only catch (...) does. The runtime's boundaries
// (Program::load_bytes, Program::run, the C API) therefore end with catch (...) and name what
// they caught from its mangled type name, which every copy shares.
#pragma once

#include <string>
#include <typeinfo>

#if defined(__has_include)
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define EDGERT_HAVE_CXXABI 1
#endif
#endif

#include "edgert/status.hpp"

namespace edgert {

// The mangled name of the exception being handled ("St9bad_alloc"), or "" where the C++
// runtime cannot tell. Call inside a catch block only.
inline std::string caught_type_name() {
#if defined(EDGERT_HAVE_CXXABI)
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type != nullptr) return type->name();
#endif
  return "";
}

// The status for the exception being handled, when no typed handler of this library matched
// it: out of memory, a size too large (``too_large`` is the code for that), or internal.
inline Status caught_exception_status(Code too_large, const std::string& during) {
  const std::string type = caught_type_name();
  const std::string suffix = during.empty() ? "" : " " + during;
  if (type == "St9bad_alloc" || type == "St20bad_array_new_length") {
    return Status(Code::OutOfMemory, "out of memory" + suffix);
  }
  if (type == "St12length_error") return Status(too_large, "a tensor size is too large" + suffix);
  return Status(Code::Internal, "unexpected C++ exception" + (type.empty() ? "" : " " + type) + suffix);
}

}  // namespace edgert
