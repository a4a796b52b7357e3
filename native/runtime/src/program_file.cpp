// open_program_file: mmap (POSIX) or a file mapping (Windows), and plain reading.
#include "program_file.hpp"

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#if defined(_WIN32)
#include <windows.h>
#else
#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace edgert {

std::shared_ptr<void> allocate_program_bytes(size_t size) {
  constexpr std::align_val_t kAlignment{64};
  void* memory = ::operator new(size == 0 ? 1 : size, kAlignment);
  // If the control block cannot be allocated, shared_ptr calls the deleter itself.
  return std::shared_ptr<void>(memory, [](void* pointer) { ::operator delete(pointer, kAlignment); });
}

namespace {

Status unreadable(const std::string& path, const std::string& why) {
  return Status(Code::NotFound, "cannot read program file '" + path + "': " + why);
}

// Takes bytes read in pieces (a pipe's, whose size is unknown) into one aligned copy.
void adopt_copy(const std::vector<char>& bytes, ProgramFile& file) {
  std::shared_ptr<void> copy = allocate_program_bytes(bytes.size());
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  file.data = copy.get();
  file.size = bytes.size();
  file.owner = std::move(copy);
  file.storage = ConstantStorage::Copied;
}

#if defined(_WIN32)

std::string system_message(DWORD code) {
  char buffer[256] = {};
  DWORD length = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0, buffer,
                                sizeof buffer, nullptr);
  while (length > 0 && (buffer[length - 1] == '\n' || buffer[length - 1] == '\r')) --length;
  return length ? std::string(buffer, length) : "system error " + std::to_string(code);
}

// Paths are UTF-8 (the C API's convention); Windows opens them as UTF-16.
bool wide_path(const std::string& path, std::wstring& wide) {
  if (path.empty()) return false;
  const int length =
      MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path.data(), static_cast<int>(path.size()), nullptr, 0);
  if (length <= 0) return false;
  wide.assign(static_cast<size_t>(length), L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path.data(), static_cast<int>(path.size()), &wide[0], length);
  return true;
}

struct Handle {
  HANDLE value = INVALID_HANDLE_VALUE;
  ~Handle() {
    if (value != INVALID_HANDLE_VALUE && value != nullptr) CloseHandle(value);
  }
};

Status read_all(const std::string& path, HANDLE handle, ProgramFile& file) {
  std::vector<char> bytes;
  char chunk[1 << 16];
  for (;;) {
    DWORD got = 0;
    if (!ReadFile(handle, chunk, sizeof chunk, &got, nullptr)) {
      const DWORD error = GetLastError();
      if (error == ERROR_BROKEN_PIPE || error == ERROR_HANDLE_EOF) break;  // the writer is done
      return unreadable(path, system_message(error));
    }
    if (got == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  adopt_copy(bytes, file);
  return Status::success();
}

Status map_all(const std::string& path, HANDLE handle, size_t size, ProgramFile& file) {
  Handle mapping;
  mapping.value = CreateFileMappingW(handle, nullptr, PAGE_READONLY, 0, 0, nullptr);
  if (mapping.value == nullptr) return unreadable(path, "cannot map it: " + system_message(GetLastError()));
  void* view = MapViewOfFile(mapping.value, FILE_MAP_READ, 0, 0, 0);
  if (view == nullptr) return unreadable(path, "cannot map it: " + system_message(GetLastError()));
  file.owner = std::shared_ptr<const void>(view, [](const void* pointer) { UnmapViewOfFile(pointer); });
  file.data = view;
  file.size = size;
  file.storage = ConstantStorage::Mapped;
  return Status::success();
}

}  // namespace

Status open_program_file(const std::string& path, size_t copy_below, ProgramFile& file) {
  std::wstring wide;
  if (!wide_path(path, wide)) return unreadable(path, "the path is empty or not UTF-8");
  Handle handle;
  // No FILE_SHARE_WRITE: nobody may write the file while it is being opened; and once it is
  // mapped, Windows refuses to truncate it.
  handle.value = CreateFileW(wide.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                             FILE_ATTRIBUTE_NORMAL, nullptr);
  if (handle.value == INVALID_HANDLE_VALUE) {
    return Status(Code::NotFound, "cannot open program file '" + path + "': " + system_message(GetLastError()));
  }
  LARGE_INTEGER size{};
  if (GetFileType(handle.value) != FILE_TYPE_DISK || !GetFileSizeEx(handle.value, &size)) {
    return read_all(path, handle.value, file);
  }
  if (static_cast<unsigned long long>(size.QuadPart) > SIZE_MAX) return unreadable(path, "too large to map");
  const size_t bytes = static_cast<size_t>(size.QuadPart);
  if (bytes < copy_below || bytes == 0) return read_all(path, handle.value, file);
  return map_all(path, handle.value, bytes, file);
}

#else  // POSIX

struct Descriptor {
  int value = -1;
  ~Descriptor() {
    if (value >= 0) close(value);
  }
};

Status read_all(const std::string& path, int descriptor, ProgramFile& file) {
  std::vector<char> bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t got = read(descriptor, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return unreadable(path, std::strerror(errno));
    if (got == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  adopt_copy(bytes, file);
  return Status::success();
}

Status map_all(const std::string& path, int descriptor, size_t size, ProgramFile& file) {
  void* address = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, descriptor, 0);
  if (address == MAP_FAILED) return unreadable(path, std::string("cannot map it: ") + std::strerror(errno));
  file.owner =
      std::shared_ptr<const void>(address, [size](const void* pointer) { munmap(const_cast<void*>(pointer), size); });
  file.data = address;
  file.size = size;
  file.storage = ConstantStorage::Mapped;
  return Status::success();
}

}  // namespace

Status open_program_file(const std::string& path, size_t copy_below, ProgramFile& file) {
  Descriptor descriptor;
  do {
    descriptor.value = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (descriptor.value < 0 && errno == EINTR);
  if (descriptor.value < 0) {
    return Status(Code::NotFound, "cannot open program file '" + path + "': " + std::strerror(errno));
  }
  struct stat info{};
  if (fstat(descriptor.value, &info) != 0) return unreadable(path, std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return unreadable(path, "it is a directory");
  if (!S_ISREG(info.st_mode)) return read_all(path, descriptor.value, file);  // a pipe, a device
  if (static_cast<unsigned long long>(info.st_size) > SIZE_MAX) return unreadable(path, "too large to map");
  const size_t size = static_cast<size_t>(info.st_size);
  if (size < copy_below || size == 0) return read_all(path, descriptor.value, file);
  return map_all(path, descriptor.value, size, file);
}

#endif

}  // namespace edgert
