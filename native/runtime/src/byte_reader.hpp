// Bounds-checked little-endian reading of untrusted bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace edgert {

class ByteReader {
 public:
  ByteReader(const void* data, size_t size) : data_(static_cast<const uint8_t*>(data)), size_(size) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return size_ - offset_; }
  const uint8_t* cursor() const { return data_ + offset_; }

  bool read_u8(uint8_t& value);
  bool read_u16(uint16_t& value);
  bool read_u32(uint32_t& value);
  bool read_i32(int32_t& value);
  bool read_u64(uint64_t& value);
  bool read_i64(int64_t& value);
  bool read_f64(double& value);
  bool read_string(std::string& value, size_t max_length);
  bool skip(size_t count);
  // Skips to the next multiple of `alignment` from the start; the skipped bytes must be zero.
  bool align_to(size_t alignment);

 private:
  bool read_little_endian(uint64_t& value, size_t width);

  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

}  // namespace edgert
