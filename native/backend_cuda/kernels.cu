// The CUDA delegate's device code. Compiled to a fatbinary by the variant's toolchain (nvcc,
// or NVRTC + ptxas + nvFatbin for CUDA 12) for exactly the claimed architectures, embedded in
// the library's .nv_fatbin section and loaded with cudaLibraryLoadData at run time. No
// headers: the file must compile with NVRTC as well as nvcc.

#define EDGERT_MAX_RANK 6

// Broadcasting plan of a binary elementwise operation (row-major output).
struct EdgertBroadcast {
  long long count;  // output elements
  int rank;
  long long shape[EDGERT_MAX_RANK];      // output shape
  long long a_strides[EDGERT_MAX_RANK];  // element strides, 0 along broadcast dimensions
  long long b_strides[EDGERT_MAX_RANK];
};

__device__ inline long long edgert_index() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// y[r, n] = act(sum_k x[r, k] * w[n, k] + bias[n]); summed over k in order like the CPU kernel.
extern "C" __global__ void edgert_linear(const float* x, const float* w, const float* bias, float* y, long long rows,
                                         long long n_out, long long k_in, int relu) {
  const long long index = edgert_index();
  if (index >= rows * n_out) return;
  const long long row = index / n_out, column = index % n_out;
  const float* x_row = x + row * k_in;
  const float* w_row = w + column * k_in;
  float sum = 0.0f;
  for (long long k = 0; k < k_in; ++k) sum += x_row[k] * w_row[k];
  if (bias != nullptr) sum += bias[column];
  y[index] = (relu && sum < 0.0f) ? 0.0f : sum;
}

extern "C" __global__ void edgert_add(const float* a, const float* b, float* y, EdgertBroadcast plan) {
  const long long index = edgert_index();
  if (index >= plan.count) return;
  long long rest = index, a_offset = 0, b_offset = 0;
  for (int d = plan.rank - 1; d >= 0; --d) {
    const long long i = rest % plan.shape[d];
    rest /= plan.shape[d];
    a_offset += i * plan.a_strides[d];
    b_offset += i * plan.b_strides[d];
  }
  y[index] = a[a_offset] + b[b_offset];
}

extern "C" __global__ void edgert_relu(const float* x, float* y, long long count) {
  const long long index = edgert_index();
  if (index < count) y[index] = x[index] > 0.0f ? x[index] : 0.0f;
}

// One thread per (outer, inner) line of `length` elements along the softmax axis.
extern "C" __global__ void edgert_softmax(const float* x, float* y, long long outer, long long length,
                                          long long inner) {
  const long long line = edgert_index();
  if (line >= outer * inner) return;
  const long long base = (line / inner) * length * inner + line % inner;
  float maximum = x[base];
  for (long long i = 1; i < length; ++i) maximum = fmaxf(maximum, x[base + i * inner]);
  float total = 0.0f;
  for (long long i = 0; i < length; ++i) {
    const float e = expf(x[base + i * inner] - maximum);
    y[base + i * inner] = e;
    total += e;
  }
  for (long long i = 0; i < length; ++i) y[base + i * inner] /= total;
}
