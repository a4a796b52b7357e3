// Each operator once with strided views (dimensions swapped, every other row) and once with
// contiguous copies of the same values: the outputs must be the same bytes.
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "edgert/runtime.hpp"

using namespace edgert;

Tensor filled(DType dtype, std::vector<int64_t> shape, unsigned seed) {
  Tensor tensor(dtype, std::move(shape));
  unsigned state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    const int value = static_cast<int>((state >> 8) % 201) - 100;
    switch (dtype) {
      case DType::Float32: tensor.data_as<float>()[i] = value / 37.0f; break;
      case DType::Int32: tensor.data_as<int32_t>()[i] = value; break;
      case DType::Int64: tensor.data_as<int64_t>()[i] = value; break;
      case DType::Bool: tensor.data_as<uint8_t>()[i] = value > 0; break;
      default: tensor.data_as<uint8_t>()[i] = static_cast<uint8_t>(value); break;
    }
  }
  return tensor;
}

Tensor swapped(const Tensor& base) {
  std::vector<int64_t> shape = base.shape(), strides = base.strides();
  std::swap(shape[0], shape[1]);
  std::swap(strides[0], strides[1]);
  return Tensor::view(base.dtype(), shape, strides, const_cast<void*>(base.data()), nullptr);
}

Tensor every_other(const Tensor& base) {
  std::vector<int64_t> shape = base.shape(), strides = base.strides();
  shape[0] = (shape[0] + 1) / 2;
  strides[0] *= 2;
  return Tensor::view(base.dtype(), shape, strides, const_cast<void*>(base.data()), nullptr);
}

int failures = 0;

void check(const std::string& op, std::vector<Tensor> strided, Attributes attributes = {}) {
  KernelFn kernel = find_operator(op);
  std::vector<Tensor> contiguous;
  for (const Tensor& t : strided) contiguous.push_back(t.contiguous());
  std::vector<Tensor> a(1), b(1);
  auto run = [&](std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
    KernelContext context;
    context.op = op.c_str();
    for (const Tensor& t : inputs) context.inputs.push_back(&t);
    context.attributes = &attributes;
    context.outputs = &outputs;
    return kernel ? kernel(context) : Status(Code::NotFound, "not registered");
  };
  Status first = run(strided, a), second = run(contiguous, b);
  bool same = first.ok() && second.ok() && !strided[0].is_contiguous() &&
              a[0].shape() == b[0].shape() && a[0].dtype() == b[0].dtype() &&
              a[0].is_contiguous() && a[0].numel() > 0 &&
              std::memcmp(a[0].data(), b[0].data(), a[0].nbytes()) == 0;
  std::printf("%s %s %s %s\n", same ? "SAME" : "DIFFERENT", op.c_str(), first.message().c_str(),
              second.message().c_str());
  failures += !same;
}

int main() {
  const Tensor big = filled(DType::Float32, {40, 33, 5}, 1), m = filled(DType::Float32, {37, 21}, 2);
  const Tensor i32 = filled(DType::Int32, {37, 21}, 3), i64 = filled(DType::Int64, {37, 21}, 4);
  const Tensor flags = filled(DType::Bool, {37, 21}, 5), bytes = filled(DType::Int8, {37, 21}, 6);
  for (const char* name : {"sigmoid", "tanh", "silu", "hardswish", "hardsigmoid", "exp", "log",
                           "sqrt", "rsqrt", "reciprocal", "erf", "floor", "ceil", "round", "abs", "neg"}) {
    check(std::string("edgert::") + name, {swapped(big)});
    check(std::string("edgert::") + name, {every_other(m)});
  }
  Attributes bounds, axes0, axes02, axis1;
  bounds.set("min", -0.5);
  bounds.set("max", 1.25);
  axes0.set("axes", std::vector<int64_t>{0});
  axes02.set("axes", std::vector<int64_t>{0, 2});
  axis1.set("axis", int64_t{1});
  check("edgert::clamp", {swapped(big)}, bounds);
  check("edgert::clamp", {every_other(i64)}, bounds);
  check("edgert::abs", {swapped(i32)});
  for (const char* name : {"maximum", "minimum", "pow", "equal", "less_equal", "greater"}) {
    check(std::string("edgert::") + name, {swapped(m), filled(DType::Float32, {21, 37}, 7)});
    check(std::string("edgert::") + name, {every_other(big), filled(DType::Float32, {5}, 8)});
  }
  check("edgert::maximum", {swapped(i32), filled(DType::Int32, {21, 37}, 9)});
  check("edgert::not_equal", {every_other(i64), filled(DType::Int64, {1, 21}, 10)});
  check("edgert::equal", {swapped(flags), filled(DType::Bool, {21, 37}, 11)});
  check("edgert::logical_xor", {swapped(flags), filled(DType::Bool, {21, 1}, 12)});
  check("edgert::logical_not", {every_other(flags)});
  check("edgert::where", {swapped(flags), swapped(m), filled(DType::Float32, {1}, 13)});
  check("edgert::where", {every_other(flags), every_other(i64), every_other(i64)});
  check("edgert::where", {swapped(flags), swapped(bytes), swapped(bytes)});
  for (const char* name : {"sum", "mean", "max", "min", "any", "all"}) {
    check(std::string("edgert::") + name, {swapped(big)}, axes0);
    check(std::string("edgert::") + name, {every_other(big)}, axes02);
    check(std::string("edgert::") + name, {swapped(m)});
  }
  check("edgert::sum", {swapped(i32)}, axes0);
  check("edgert::any", {swapped(flags)}, axes0);
  check("edgert::argmax", {swapped(big)}, axis1);
  check("edgert::argmin", {every_other(i64)});
  return failures == 0 ? 0 : 1;
}
