// The bytes of a program file: a read-only private mapping of the whole file, or, for small
// files and files that cannot be mapped (pipes), the bytes read into memory.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "edgert/runtime.hpp"

namespace edgert {

struct ProgramFile {
  const void* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;  // unmaps or frees the bytes when the last user goes
  ConstantStorage storage = ConstantStorage::Copied;
};

// Memory of `size` bytes aligned to 64, owned by the returned pointer. Throws std::bad_alloc.
std::shared_ptr<void> allocate_program_bytes(size_t size);

// Opens `path` and maps it (files of at least `copy_below` bytes) or reads it. A missing or
// unreadable file is NotFound naming the path and the system's reason.
Status open_program_file(const std::string& path, size_t copy_below, ProgramFile& file);

}  // namespace edgert
