// Stable, index-based access to the registries for the C API.
#pragma once

#include <cstddef>

namespace edgert {
namespace registry {

// Entries are never removed, so the returned strings live as long as the process.
size_t operator_count();
const char* operator_name(size_t index);   // null when out of range
const char* operator_owner(size_t index);
size_t backend_count();
const char* backend_name(size_t index);
const char* backend_owner(size_t index);

}  // namespace registry
}  // namespace edgert
