// Stable, index-based access to the registries for the C API.
#pragma once

#include <cstddef>
#include <string>

namespace edgert {
namespace registry {

// Entries are never removed, so the returned strings live as long as the process.
size_t operator_count();
const char* operator_name(size_t index);  // null when out of range
const char* operator_owner(size_t index);
size_t backend_count();
const char* backend_name(size_t index);
const char* backend_owner(size_t index);

}  // namespace registry

// "unknown backend 'name'", with what to do for the backends edgert ships (program.cpp): for
// "cuda" on the CPU build, which build this is and which to install.
std::string unknown_backend_message(const std::string& name);

}  // namespace edgert
