// parse_program: the loader of the binary program format. Every read is bounds-checked;
// every count is checked against the bytes left before anything is reserved.
#include <new>
#include <stdexcept>
#include <cstring>
#include <memory>
#include <string>

#include "byte_reader.hpp"
#include "edgert/runtime.hpp"
#include "program_format.hpp"

namespace edgert {

Status validate_graph(const Graph& graph);  // program_validate.cpp

namespace {

// Where constant data goes: copied into tensors of its own, or viewed in place in the bytes
// being parsed, each view holding `keep_alive` (null: the caller keeps the bytes alive).
struct ConstantSource {
  bool in_place = false;
  std::shared_ptr<void> keep_alive;
};

Status invalid(const ByteReader& reader, const std::string& what) {
  return Status(Code::InvalidProgram,
                "invalid program: " + what + " (at byte offset " + std::to_string(reader.offset()) + ")");
}

Status read_count(ByteReader& reader, size_t record_size, const char* what, uint32_t& count) {
  if (!reader.read_u32(count)) return invalid(reader, std::string("truncated ") + what + " count");
  if (static_cast<uint64_t>(count) * record_size > reader.remaining()) {
    return invalid(reader, std::string(what) + " count " + std::to_string(count) + " exceeds the remaining bytes");
  }
  return Status::success();
}

std::string hex32(uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text = "0x00000000";
  for (int i = 9; i >= 2; --i, value >>= 4) text[static_cast<size_t>(i)] = digits[value & 0xF];
  return text;
}

// The checksum is checked before anything past the magic and the version is read: those two
// say whether the file carries one and where. A mismatch names the bytes it covers.
Status check_checksum(const uint8_t* data, size_t size) {
  ByteReader fields(data, size);
  uint64_t declared_size = 0;
  uint32_t stored = 0;
  fields.skip(16);
  fields.read_u64(declared_size);
  fields.read_u32(stored);
  const uint32_t computed = program_checksum(data, size);
  if (stored == computed) return Status::success();
  std::string why = "(file corrupted";
  if (declared_size != size) {
    why += ", or truncated or padded: the header declares " + std::to_string(declared_size) + " bytes, the file has " +
           std::to_string(size);
  }
  return Status(Code::InvalidProgram, "invalid program: program bytes 0.." + std::to_string(size) +
                                          ": checksum mismatch " + why + "; stored " + hex32(stored) + ", computed " +
                                          hex32(computed) + "; write the program again from its source)");
}

Status read_header(ByteReader& reader, const void* data, size_t size, uint32_t& version) {
  if (size < 12) return invalid(reader, "truncated header");
  if (std::memcmp(reader.cursor(), format::kMagic, sizeof format::kMagic) != 0) {
    return invalid(reader, "wrong magic (not an edgert program)");
  }
  reader.skip(sizeof format::kMagic);
  reader.read_u32(version);
  if (version < format::kOldestVersion || version > format::kVersion) {
    return invalid(reader, "unsupported format version " + std::to_string(version) + " (this runtime reads versions " +
                               std::to_string(format::kOldestVersion) + " to " + std::to_string(format::kVersion) +
                               ")");
  }
  const size_t header_size = version >= 2 ? format::kHeaderSize : format::kHeaderSizeV1;
  if (size < header_size) return invalid(reader, "truncated header");
  if (version >= 2) EDGERT_RETURN_IF_ERROR(check_checksum(static_cast<const uint8_t*>(data), size));
  uint32_t flags = 0;
  uint64_t declared_size = 0;
  reader.read_u32(flags);
  reader.read_u64(declared_size);
  if (flags != 0) return invalid(reader, "unknown header flags " + std::to_string(flags));
  if (declared_size != size) {
    return invalid(reader, "declared size " + std::to_string(declared_size) + " differs from the actual size " +
                               std::to_string(size) + " (truncated or padded file)");
  }
  if (version >= 2) {
    uint32_t checksum = 0, reserved = 0;
    reader.read_u32(checksum);
    reader.read_u32(reserved);
    if (reserved != 0) return invalid(reader, "non-zero reserved header field");
  }
  return Status::success();
}

// Checked element count: every dim >= 0 (or -1 where allowed) and no overflow.
Status checked_numel(ByteReader& reader, const std::vector<int64_t>& shape, bool allow_unknown, DType dtype,
                     int64_t& numel) {
  numel = 1;
  const int64_t limit = (int64_t{1} << 62) / static_cast<int64_t>(dtype_size(dtype));
  for (int64_t dim : shape) {
    if (dim == -1 && allow_unknown) continue;
    if (dim < 0) return invalid(reader, "negative dimension " + std::to_string(dim));
    if (dim != 0 && numel > limit / dim) return invalid(reader, "element count overflows");
    numel *= dim;
  }
  return Status::success();
}

Status read_constant(ByteReader& reader, const ConstantSource& source, ValueInfo& value) {
  int64_t numel = 0;
  EDGERT_RETURN_IF_ERROR(checked_numel(reader, value.shape, false, value.dtype, numel));
  uint64_t byte_length = 0;
  if (!reader.read_u64(byte_length)) return invalid(reader, "truncated constant length");
  const uint64_t expected = static_cast<uint64_t>(numel) * dtype_size(value.dtype);
  if (byte_length != expected) {
    return invalid(reader, "constant holds " + std::to_string(byte_length) + " bytes but its dtype and shape need " +
                               std::to_string(expected));
  }
  if (!reader.align_to(format::kConstantAlignment)) {
    return invalid(reader, "truncated or non-zero constant padding");
  }
  if (byte_length > reader.remaining()) return invalid(reader, "truncated constant data");
  if (source.in_place) {
    value.constant =
        Tensor::view(value.dtype, value.shape, {}, const_cast<uint8_t*>(reader.cursor()), source.keep_alive);
  } else {
    value.constant = Tensor::uninitialized(value.dtype, value.shape);  // every byte is written
    if (byte_length) std::memcpy(value.constant.data(), reader.cursor(), byte_length);
  }
  reader.skip(byte_length);
  return Status::success();
}

Status read_value(ByteReader& reader, const ConstantSource& source, ValueInfo& value) {
  uint8_t dtype = 0, kind = 0;
  uint16_t reserved = 0;
  uint32_t ndim = 0;
  if (!reader.read_u8(dtype) || !reader.read_u8(kind) || !reader.read_u16(reserved) || !reader.read_u32(ndim)) {
    return invalid(reader, "truncated value record");
  }
  if (!dtype_is_valid(dtype)) return invalid(reader, "unknown dtype code " + std::to_string(dtype));
  if (kind > format::kConstantValue) return invalid(reader, "unknown value kind " + std::to_string(kind));
  if (reserved != 0) return invalid(reader, "non-zero reserved field in a value record");
  if (ndim > format::kMaxDims) return invalid(reader, "too many dimensions: " + std::to_string(ndim));
  value.dtype = static_cast<DType>(dtype);
  value.is_constant = kind == format::kConstantValue;
  value.shape.resize(ndim);
  for (int64_t& dim : value.shape) {
    if (!reader.read_i64(dim)) return invalid(reader, "truncated shape");
  }
  if (value.is_constant) return read_constant(reader, source, value);
  int64_t numel = 0;
  return checked_numel(reader, value.shape, true, value.dtype, numel);
}

Status read_indices(ByteReader& reader, const char* what, std::vector<int32_t>& indices) {
  uint32_t count = 0;
  EDGERT_RETURN_IF_ERROR(read_count(reader, 4, what, count));
  indices.resize(count);
  for (int32_t& index : indices) reader.read_i32(index);
  return Status::success();
}

Status read_list_attribute(ByteReader& reader, uint8_t kind, AttributeValue& value) {
  uint32_t count = 0;
  EDGERT_RETURN_IF_ERROR(read_count(reader, 8, "attribute list", count));
  if (kind == format::kInts) {
    std::vector<int64_t> items(count);
    for (int64_t& item : items) reader.read_i64(item);
    value = std::move(items);
  } else {
    std::vector<double> items(count);
    for (double& item : items) reader.read_f64(item);
    value = std::move(items);
  }
  return Status::success();
}

Status read_attribute_value(ByteReader& reader, uint8_t kind, AttributeValue& value) {
  switch (kind) {
    case format::kInt: {
      int64_t item = 0;
      if (!reader.read_i64(item)) return invalid(reader, "truncated int attribute");
      value = item;
      return Status::success();
    }
    case format::kFloat: {
      double item = 0;
      if (!reader.read_f64(item)) return invalid(reader, "truncated float attribute");
      value = item;
      return Status::success();
    }
    case format::kString: {
      std::string item;
      if (!reader.read_string(item, format::kMaxStringLength)) {
        return invalid(reader, "truncated or oversized string attribute");
      }
      value = std::move(item);
      return Status::success();
    }
    case format::kInts:
    case format::kFloats: return read_list_attribute(reader, kind, value);
    default: return invalid(reader, "unknown attribute kind " + std::to_string(kind));
  }
}

Status read_attributes(ByteReader& reader, Attributes& attributes) {
  uint32_t count = 0;
  EDGERT_RETURN_IF_ERROR(read_count(reader, format::kMinAttributeSize, "attribute", count));
  for (uint32_t i = 0; i < count; ++i) {
    std::string name;
    uint8_t kind = 0;
    if (!reader.read_string(name, format::kMaxStringLength) || !reader.read_u8(kind)) {
      return invalid(reader, "truncated attribute");
    }
    if (name.empty() || attributes.has(name)) {
      return invalid(reader, "empty or repeated attribute name '" + name + "'");
    }
    AttributeValue value;
    EDGERT_RETURN_IF_ERROR(read_attribute_value(reader, kind, value));
    attributes.set(name, std::move(value));
  }
  return Status::success();
}

Status read_node(ByteReader& reader, Node& node) {
  if (!reader.read_string(node.op, format::kMaxStringLength) || node.op.empty()) {
    return invalid(reader, "truncated, empty or oversized operator name");
  }
  EDGERT_RETURN_IF_ERROR(read_indices(reader, "node input", node.inputs));
  EDGERT_RETURN_IF_ERROR(read_indices(reader, "node output", node.outputs));
  return read_attributes(reader, node.attributes);
}

Status read_sections(ByteReader& reader, const ConstantSource& source, Graph& graph) {
  uint32_t count = 0;
  EDGERT_RETURN_IF_ERROR(read_count(reader, format::kMinValueSize, "value", count));
  graph.values.resize(count);
  for (ValueInfo& value : graph.values) EDGERT_RETURN_IF_ERROR(read_value(reader, source, value));
  EDGERT_RETURN_IF_ERROR(read_count(reader, format::kMinNodeSize, "node", count));
  graph.nodes.resize(count);
  for (Node& node : graph.nodes) EDGERT_RETURN_IF_ERROR(read_node(reader, node));
  EDGERT_RETURN_IF_ERROR(read_indices(reader, "graph input", graph.inputs));
  EDGERT_RETURN_IF_ERROR(read_indices(reader, "graph output", graph.outputs));
  if (reader.remaining() != 0) return invalid(reader, "trailing bytes after the graph outputs");
  return Status::success();
}

Status parse_with(const void* data, size_t size, const ConstantSource& source, Graph& graph) {
  graph = Graph();
  if (data == nullptr && size != 0) return Status(Code::InvalidArgument, "null program data");
  ByteReader reader(data, size);
  uint32_t version = 0;
  Status status = read_header(reader, data, size, version);
  try {
    if (status.ok()) status = read_sections(reader, source, graph);
  } catch (const std::length_error& error) {
    status = Status(Code::InvalidProgram, std::string("a tensor size is too large: ") + error.what());
  } catch (const std::bad_alloc&) {
    status = Status(Code::OutOfMemory, "out of memory while reading the program");
  }
  if (status.ok()) status = validate_graph(graph);
  if (status.ok()) count_readers(graph);
  if (status.ok()) graph.format_version = version;
  if (!status.ok()) graph = Graph();
  return status;
}

}  // namespace

Status parse_program(const void* data, size_t size, Graph& graph) {
  return parse_with(data, size, ConstantSource{}, graph);
}

Status parse_program_in_place(const void* data, size_t size, const std::shared_ptr<const void>& keep_alive,
                              Graph& graph) {
  return parse_with(data, size, ConstantSource{true, std::const_pointer_cast<void>(keep_alive)}, graph);
}

}  // namespace edgert
