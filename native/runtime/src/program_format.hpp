// Constants of the binary program format (docs/program-format.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgert {
namespace format {

constexpr char kMagic[8] = {'E', 'D', 'G', 'R', 'T', 'P', 'R', 'G'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 24;
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
