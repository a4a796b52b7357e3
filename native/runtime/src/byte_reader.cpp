#include "byte_reader.hpp"

#include <cstring>

namespace edgert {

bool ByteReader::read_little_endian(uint64_t& value, size_t width) {
  if (remaining() < width) return false;
  value = 0;
  for (size_t i = 0; i < width; ++i) value |= static_cast<uint64_t>(data_[offset_ + i]) << (8 * i);
  offset_ += width;
  return true;
}

bool ByteReader::read_u8(uint8_t& value) {
  uint64_t raw = 0;
  if (!read_little_endian(raw, 1)) return false;
  value = static_cast<uint8_t>(raw);
  return true;
}

bool ByteReader::read_u16(uint16_t& value) {
  uint64_t raw = 0;
  if (!read_little_endian(raw, 2)) return false;
  value = static_cast<uint16_t>(raw);
  return true;
}

bool ByteReader::read_u32(uint32_t& value) {
  uint64_t raw = 0;
  if (!read_little_endian(raw, 4)) return false;
  value = static_cast<uint32_t>(raw);
  return true;
}

bool ByteReader::read_i32(int32_t& value) {
  uint32_t raw = 0;
  if (!read_u32(raw)) return false;
  value = static_cast<int32_t>(raw);
  return true;
}

bool ByteReader::read_u64(uint64_t& value) {
  return read_little_endian(value, 8);
}

bool ByteReader::read_i64(int64_t& value) {
  uint64_t raw = 0;
  if (!read_little_endian(raw, 8)) return false;
  value = static_cast<int64_t>(raw);
  return true;
}

bool ByteReader::read_f64(double& value) {
  uint64_t raw = 0;
  if (!read_little_endian(raw, 8)) return false;
  std::memcpy(&value, &raw, sizeof value);
  return true;
}

bool ByteReader::read_string(std::string& value, size_t max_length) {
  uint32_t length = 0;
  if (!read_u32(length) || length > max_length || remaining() < length) return false;
  value.assign(reinterpret_cast<const char*>(cursor()), length);
  offset_ += length;
  return true;
}

bool ByteReader::skip(size_t count) {
  if (remaining() < count) return false;
  offset_ += count;
  return true;
}

bool ByteReader::align_to(size_t alignment) {
  size_t padding = (alignment - offset_ % alignment) % alignment;
  if (remaining() < padding) return false;
  for (size_t i = 0; i < padding; ++i) {
    if (data_[offset_ + i] != 0) return false;
  }
  offset_ += padding;
  return true;
}

}  // namespace edgert
