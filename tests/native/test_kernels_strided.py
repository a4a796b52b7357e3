"""Kernels read non-contiguous (strided) inputs correctly.

Programs bind inputs as contiguous copies, so strided views only reach a kernel from C++.
This test builds a small C++ program against the installed SDK headers and libraries; it
calls each registered kernel once with strided views (dimensions swapped, or every other
row) and once with contiguous copies of the same values, and requires identical bytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.native.support import NativeInstall

STRIDED_CHECK = r"""
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "edgert/runtime.hpp"

using namespace edgert;

// Deterministic values: integers in [-100, 100] (uint8: [0, 200]); with `modulo`, integers in
// [0, modulo) and floats in (0, 1] (valid scales and indices).
Tensor filled(DType dtype, std::vector<int64_t> shape, unsigned seed, int modulo = 0) {
  Tensor tensor(dtype, std::move(shape));
  unsigned state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    const int value = static_cast<int>((state >> 8) % 201) - 100;
    const int index = modulo ? static_cast<int>((state >> 8) % unsigned(modulo)) : value;
    const int nonzero = index == 0 && !modulo ? 3 : index;
    switch (dtype) {
      case DType::Float32:
        tensor.data_as<float>()[i] = modulo ? (index + 1) / 64.0f : value / 37.0f;
        break;
      case DType::Int8: tensor.data_as<int8_t>()[i] = static_cast<int8_t>(value); break;
      case DType::UInt8: tensor.data_as<uint8_t>()[i] = static_cast<uint8_t>(value + 100); break;
      case DType::Int32: tensor.data_as<int32_t>()[i] = nonzero; break;
      case DType::Int64: tensor.data_as<int64_t>()[i] = nonzero; break;
      case DType::Bool: tensor.data_as<uint8_t>()[i] = value > 0; break;
    }
  }
  return tensor;
}

Tensor f32(std::vector<int64_t> shape, unsigned seed) {
  return filled(DType::Float32, std::move(shape), seed);
}
Tensor positive(std::vector<int64_t> shape, unsigned seed) {
  return filled(DType::Float32, std::move(shape), seed, 9);
}

// Dimensions 0 and 1 swapped: a view sharing `base`'s storage.
Tensor swapped(const Tensor& base) {
  std::vector<int64_t> shape = base.shape(), strides = base.strides();
  std::swap(shape[0], shape[1]);
  std::swap(strides[0], strides[1]);
  return Tensor::view(base.dtype(), shape, strides, const_cast<void*>(base.data()), nullptr);
}

// Every other entry along dimension 0.
Tensor every_other(const Tensor& base) {
  std::vector<int64_t> shape = base.shape(), strides = base.strides();
  shape[0] = (shape[0] + 1) / 2;
  strides[0] *= 2;
  return Tensor::view(base.dtype(), shape, strides, const_cast<void*>(base.data()), nullptr);
}

Tensor scalar_f32(float v) { Tensor t(DType::Float32, {1}); *t.data_as<float>() = v; return t; }
Tensor scalar_i32(int32_t v) { Tensor t(DType::Int32, {1}); *t.data_as<int32_t>() = v; return t; }

Status run(const char* op, const std::vector<Tensor>& inputs, const Attributes& attributes,
           std::vector<Tensor>& outputs) {
  KernelFn kernel = find_operator(op);
  if (!kernel) return Status(Code::NotFound, "not registered");
  KernelContext context;
  context.op = op;
  for (const Tensor& t : inputs) context.inputs.push_back(&t);
  context.attributes = &attributes;
  context.outputs = &outputs;
  return kernel(context);
}

int failures = 0;

void check(const char* op, std::vector<Tensor> strided, Attributes attributes = {},
           size_t outputs = 1) {
  bool any_strided = false;
  std::vector<Tensor> contiguous;
  for (const Tensor& t : strided) {
    any_strided = any_strided || !t.is_contiguous();
    contiguous.push_back(t.contiguous());
  }
  std::vector<Tensor> a(outputs), b(outputs);
  Status first = run(op, strided, attributes, a), second = run(op, contiguous, attributes, b);
  bool same = any_strided && first.ok() && second.ok();
  for (size_t i = 0; same && i < outputs; ++i) {
    same = a[i].shape() == b[i].shape() && a[i].dtype() == b[i].dtype() && a[i].is_contiguous() &&
           std::memcmp(a[i].data(), b[i].data(), a[i].nbytes()) == 0 && a[i].numel() > 0;
  }
  std::printf("%s %s %s %s\n", same ? "SAME" : "DIFFERENT", op, first.message().c_str(),
              second.message().c_str());
  failures += !same;
}

int main() {
  const Tensor m34 = f32({3, 4}, 1), m43 = f32({4, 3}, 2), big = f32({6, 5, 4}, 3);
  const Tensor i32 = filled(DType::Int32, {4, 3}, 4), i64 = filled(DType::Int64, {4, 3}, 5);
  const Tensor q8 = filled(DType::Int8, {6, 5}, 6);
  Attributes axis1, axis0, perm, shape, int8;
  axis1.set("axis", int64_t{1});
  axis0.set("axis", int64_t{0});
  perm.set("perm", std::vector<int64_t>{1, 0});
  shape.set("shape", std::vector<int64_t>{-1});
  int8.set("dtype", std::string("int8"));
  for (const char* op : {"edgert::add", "edgert::sub", "edgert::mul", "edgert::div"}) {
    check(op, {swapped(m34), m43});
    check(op, {every_other(big), f32({4}, 7)});
    check(op, {swapped(i32), filled(DType::Int32, {3, 4}, 8)});
    check(op, {every_other(i64), swapped(filled(DType::Int64, {3, 2}, 9))});
  }
  check("edgert::relu", {swapped(m34)});
  check("edgert::relu", {every_other(i64)});
  check("edgert::gelu", {every_other(big)});
  check("edgert::matmul", {swapped(m34), swapped(f32({5, 3}, 27))});
  check("edgert::matmul", {every_other(big), swapped(f32({3, 4}, 10))});
  check("edgert::linear", {swapped(m34), swapped(f32({3, 5}, 11)), every_other(f32({10}, 12))});
  check("edgert::softmax", {swapped(big)}, axis1);
  check("edgert::layer_norm", {swapped(big), swapped(f32({4, 6}, 13)), f32({6, 4}, 14)}, axis1);
  check("edgert::reshape", {swapped(big)}, shape);
  check("edgert::transpose", {swapped(q8)}, perm);
  check("edgert::concat", {swapped(m34), m43, every_other(f32({7, 3}, 15))}, axis1);
  check("edgert_quantized::quantize_per_tensor", {swapped(big), scalar_f32(0.02f), scalar_i32(3)},
        int8);
  check("edgert_quantized::quantize_per_channel",
        {swapped(m34), positive({4}, 16), filled(DType::Int32, {4}, 17, 5)}, axis0);
  check("edgert_quantized::dequantize_per_tensor", {swapped(q8), scalar_f32(0.5f), scalar_i32(-2)});
  check("edgert_quantized::dequantize_per_channel",
        {every_other(q8), every_other(positive({6}, 18)), filled(DType::Int32, {3}, 28, 5)}, axis0);
  check("edgert_quantized::choose_qparams", {swapped(big)}, int8, 2);
  check("edgert_quantized::add", {swapped(q8), scalar_f32(0.1f), scalar_i32(1),
                                  swapped(filled(DType::Int8, {6, 5}, 19)), scalar_f32(0.2f),
                                  scalar_i32(-3), scalar_f32(0.25f), scalar_i32(0)});
  check("edgert_quantized::relu", {swapped(q8), scalar_i32(4)});
  check("edgert_quantized::linear", {swapped(m34), swapped(filled(DType::Int8, {3, 2}, 20)),
                                     every_other(positive({4}, 21)),
                                     filled(DType::Int32, {2}, 22, 3)});
  check("edgert_quantized::embedding_byte",
        {swapped(filled(DType::UInt8, {3, 6}, 23)), positive({6}, 24),
         filled(DType::Int32, {6}, 25, 4), swapped(filled(DType::Int64, {2, 3}, 26, 6))});
  return failures == 0 ? 0 : 1;
}
"""


ALL_OPERATORS = {
    *(
        f"edgert::{name}"
        for name in (
            "add",
            "sub",
            "mul",
            "div",
            "relu",
            "gelu",
            "matmul",
            "linear",
            "softmax",
            "layer_norm",
            "reshape",
            "transpose",
            "concat",
        )
    ),
    *(
        f"edgert_quantized::{name}"
        for name in (
            "quantize_per_tensor",
            "dequantize_per_tensor",
            "quantize_per_channel",
            "dequantize_per_channel",
            "choose_qparams",
            "add",
            "relu",
            "linear",
            "embedding_byte",
        )
    ),
}


def test_kernels_give_identical_results_for_strided_inputs(
    native_install: NativeInstall, tmp_path: Path
) -> None:
    package = native_install.package_dir
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    assert compiler, "a C++ compiler is required (the native build needs one too)"
    source = tmp_path / "strided_check.cpp"
    source.write_text(STRIDED_CHECK)
    program = tmp_path / "strided_check"
    lib = package / "lib"
    build = subprocess.run(
        [
            compiler,
            "-std=c++17",
            "-O1",
            str(source),
            "-o",
            str(program),
            f"-I{package / 'include'}",
            f"-L{lib}",
            "-Wl,--no-as-needed",
            "-ledgert_kernels",
            "-ledgert_kernels_quantized",
            "-Wl,--as-needed",
            "-ledgert",
            f"-Wl,-rpath,{lib}",
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    completed = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    assert lines and all(line.startswith("SAME ") for line in lines), completed.stdout
    assert {line.split()[1] for line in lines} == ALL_OPERATORS
