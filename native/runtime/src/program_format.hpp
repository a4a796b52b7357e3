// Constants of the binary program format (docs/program-format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "edgert/graph.hpp"
#include "edgert/status.hpp"

namespace edgert {
namespace format {

constexpr char kMagic[8] = {'E', 'D', 'G', 'R', 'T', 'P', 'R', 'G'};
// Version 2 (written since 0.1) adds a CRC-32 over the file; version 1 files still load.
constexpr uint32_t kVersion = 2;
constexpr uint32_t kOldestVersion = 1;
constexpr size_t kHeaderSizeV1 = 24;
constexpr size_t kHeaderSize = 32;      // version 2
constexpr size_t kChecksumOffset = 24;  // u32 CRC-32 of every byte but these four; u32 reserved
constexpr size_t kConstantAlignment = 16;
constexpr uint32_t kMaxDims = 8;
constexpr size_t kMaxStringLength = 4096;
// Smallest encoding of one record: lets a count be checked against the bytes left.
constexpr size_t kMinValueSize = 8;
constexpr size_t kMinNodeSize = 16;
constexpr size_t kMinAttributeSize = 9;

enum ValueKind : uint8_t { kRuntimeValue = 0, kConstantValue = 1 };
enum AttributeKind : uint8_t { kInt = 0, kFloat = 1, kString = 2, kInts = 3, kFloats = 4 };

}  // namespace format
}  // namespace edgert

namespace edgert {

// CRC-32 (zlib's) of `size` bytes, continuing from `crc` (0 to start).
uint32_t crc32_update(uint32_t crc, const void* data, size_t size);

// parse_program with the constants left in place: each is a view into `data` (which must be
// aligned to format::kConstantAlignment) holding `keep_alive`; with a null keep_alive the
// caller keeps the bytes alive as long as any constant.
Status parse_program_in_place(const void* data, size_t size, const std::shared_ptr<const void>& keep_alive,
                              Graph& graph);

}  // namespace edgert
