// scaled_dot_product_attention (docs/operators.md): softmax(q·kᵀ·scale + mask) · v.
//
// Both products run on gemm (gemm.hpp), so each score and each output is summed in
// increasing order from +0 like matmul; each row of scores is scaled, masked and put
// through softmax's arithmetic (max, edgert's exp, in-order sum, division) on one thread.
// The batch dimensions of q, k and v broadcast like matmul's. The scores are computed a
// block at a time (at most kScoreFloats of them), so long sequences do not need L·S floats
// per batch entry at once.
#include <cmath>
#include <limits>

#include "common.hpp"
#include "edgert/threadpool.h"
#include "gemm.hpp"
#include "vector_math.hpp"

namespace edgert::kernels {
namespace {

constexpr int64_t kScoreFloats = int64_t{1} << 22;  // 16 MiB of scores per block
constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

struct Attention {
  int64_t length, source, depth, value_depth;  // L, S, E, Ev
  float scale;
  bool causal;
  const float* q;                // contiguous [..., L, E]
  const float* k;                // contiguous [..., S, E]
  const float* v;                // contiguous [..., S, Ev]
  std::vector<int64_t> entries;  // per output batch entry: its q, k, v entries (3 each)
  const Tensor* mask;            // contiguous float32 or bool, or null
  Broadcast mask_plan;           // the mask against the scores [batch..., L, S]
  float* out;                    // [batch..., L, Ev]
};

// A block of `rows` rows of scores: rows [first_row, first_row + rows) of batch entry `entry`.
struct ScoreBlock {
  int64_t entry, first_row;
};

// Scales and masks row `row` of entry `entry`'s scores in place.
void mask_scores(const Attention& a, int64_t entry, int64_t row, float* scores) {
  for (int64_t j = 0; j < a.source; ++j) scores[j] = scores[j] * a.scale;
  if (a.mask != nullptr) {
    int64_t offsets[2];  // of the mask, and of the (data-less) scores
    row_offsets(a.mask_plan, entry * a.length + row, offsets);
    const int64_t offset = offsets[0];
    const int64_t step = a.mask_plan.strides[0].back();
    if (a.mask->dtype() == DType::Bool) {
      const uint8_t* keep = a.mask->data_as<uint8_t>() + offset;
      for (int64_t j = 0; j < a.source; ++j) scores[j] = keep[j * step] ? scores[j] : kMinusInfinity;
    } else {
      const float* added = a.mask->data_as<float>() + offset;
      for (int64_t j = 0; j < a.source; ++j) scores[j] = scores[j] + added[j * step];
    }
  }
  for (int64_t j = row + 1; a.causal && j < a.source; ++j) scores[j] = kMinusInfinity;
}

// softmax's arithmetic on one row of scores; a row whose every score is -inf gives zeros.
void softmax_scores(float* scores, int64_t count) {
  if (count == 0) return;
  float maximum = max_of_floats(scores, count);
  if (!(maximum > kMinusInfinity) && std::all_of(scores, scores + count, [](float s) { return s == kMinusInfinity; })) {
    std::fill(scores, scores + count, 0.0f);
    return;
  }
  exp_of_differences(scores, &maximum, 0, scores, count);
  float sum = 0.0f;
  sum_rows_in_order(scores, count, 1, count, &sum);
  binary_floats(BinaryOp::Div, scores, 1, &sum, 0, scores, count);
}

const float* entry_data(const Attention& a, int64_t entry, int which, const float* base, int64_t size) {
  return base + a.entries[static_cast<size_t>(entry * 3 + which)] * size;
}

// Blocks that all have `rows` rows: scores, then their softmax, then the product with v.
void attend(const Attention& a, const std::vector<ScoreBlock>& blocks, int64_t rows, float* scores) {
  const int64_t block_scores = rows * a.source;
  std::vector<GemmOperands> products;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const float* q = entry_data(a, blocks[b].entry, 0, a.q, a.length * a.depth) + blocks[b].first_row * a.depth;
    products.push_back({q, entry_data(a, blocks[b].entry, 1, a.k, a.source * a.depth),
                        scores + static_cast<int64_t>(b) * block_scores});
  }
  gemm(products, rows, a.source, a.depth, RightLayout::NByK, GemmEpilogue{});
  const int64_t total_rows = static_cast<int64_t>(blocks.size()) * rows;
  parallel_for(0, total_rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, a.source)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   const ScoreBlock& block = blocks[static_cast<size_t>(r / rows)];
                   float* row = scores + r * a.source;
                   mask_scores(a, block.entry, block.first_row + r % rows, row);
                   softmax_scores(row, a.source);
                 }
               });
  products.clear();
  for (size_t b = 0; b < blocks.size(); ++b) {
    float* out = a.out + (blocks[b].entry * a.length + blocks[b].first_row) * a.value_depth;
    products.push_back({scores + static_cast<int64_t>(b) * block_scores,
                        entry_data(a, blocks[b].entry, 2, a.v, a.source * a.value_depth), out});
  }
  gemm(products, rows, a.value_depth, a.source, RightLayout::KByN, GemmEpilogue{});
}

// `blocks_per_entry` blocks of `height` rows per batch entry, from row `first_row` on,
// run `per_call` blocks at a time.
void attend_blocks(const Attention& a, int64_t batch, int64_t height, int64_t first_row, int64_t blocks_per_entry,
                   int64_t per_call, float* scores) {
  std::vector<ScoreBlock> blocks;
  for (int64_t entry = 0; entry < batch; ++entry) {
    for (int64_t i = 0; i < blocks_per_entry; ++i) {
      blocks.push_back({entry, first_row + i * height});
      if (static_cast<int64_t>(blocks.size()) == per_call) {
        attend(a, blocks, height, scores);
        blocks.clear();
      }
    }
  }
  if (!blocks.empty()) attend(a, blocks, height, scores);
}

// Every batch entry's rows in blocks of `rows` rows (at most kScoreFloats scores, or one
// row), then the last L % rows rows of each entry.
void attend_all(const Attention& a, int64_t batch) {
  const int64_t source = std::max<int64_t>(1, a.source);
  const int64_t rows = std::clamp<int64_t>(kScoreFloats / source, 1, a.length);
  const int64_t full = a.length / rows, tail = a.length % rows;
  const int64_t per_call = std::min(std::max<int64_t>(1, kScoreFloats / (rows * source)), batch * (full + 1));
  std::vector<float> scores(static_cast<size_t>(per_call * rows * a.source));
  attend_blocks(a, batch, rows, 0, full, per_call, scores.data());
  if (tail > 0) attend_blocks(a, batch, tail, full * rows, 1, per_call, scores.data());
}

Status check_operands(const KernelContext& context, const Tensor& q, const Tensor& k, const Tensor& v) {
  EDGERT_RETURN_IF_ERROR(check_dtype(context, q, DType::Float32, "q"));
  EDGERT_RETURN_IF_ERROR(check_dtype(context, k, DType::Float32, "k"));
  EDGERT_RETURN_IF_ERROR(check_dtype(context, v, DType::Float32, "v"));
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2 || k.size(-1) != q.size(-1) || v.size(-2) != k.size(-2)) {
    return invalid(context, "q " + shape_text(q.shape()) + ", k " + shape_text(k.shape()) + " and v " +
                                shape_text(v.shape()) + " do not match (q [..., L, E], k [..., S, E], v [..., S, Ev])");
  }
  return Status::success();
}

// A data-less tensor of the batch dimensions of `tensor` (all but the last two).
Tensor batch_view(const Tensor& tensor) {
  const std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end() - 2);
  return Tensor::view(DType::Float32, shape, Tensor::contiguous_strides(shape), nullptr, nullptr);
}

// The broadcast batch shape of q, k and v (plan.shape).
Status broadcast_batches(const KernelContext& context, const Tensor& q, const Tensor& k, const Tensor& v,
                         Broadcast& plan) {
  const Tensor views[3] = {batch_view(q), batch_view(k), batch_view(v)};
  return broadcast(context, {&views[0], &views[1], &views[2]}, plan);
}

// Each output batch entry's q, k and v entries.
std::vector<int64_t> batch_entries(Broadcast plan) {
  const int64_t count = product(plan.shape, 0, plan.shape.size());
  plan.shape.push_back(1);  // whole entries, found as rows
  for (auto& strides : plan.strides) strides.push_back(0);
  std::vector<int64_t> entries;
  for (int64_t entry = 0; entry < count; ++entry) {
    int64_t offsets[3];
    row_offsets(plan, entry, offsets);
    entries.insert(entries.end(), offsets, offsets + 3);
  }
  return entries;
}

Status check_size(const KernelContext& context, const std::vector<int64_t>& shape, const char* what) {
  int64_t count = 0;
  if (checked_element_count(shape, sizeof(float), &count)) return Status::success();
  return invalid(context, std::string("the ") + what + " " + shape_text(shape) + " would be too large");
}

// The mask (bool or float32) must broadcast to the scores' shape [batch..., L, S].
Status plan_mask(const KernelContext& context, const Tensor& mask, std::vector<int64_t> scores_shape, Broadcast& plan) {
  if (mask.dtype() != DType::Bool && mask.dtype() != DType::Float32) {
    return invalid(context, std::string("mask must be bool or float32, got ") + dtype_name(mask.dtype()));
  }
  const Tensor scores =
      Tensor::view(DType::Float32, scores_shape, Tensor::contiguous_strides(scores_shape), nullptr, nullptr);
  EDGERT_RETURN_IF_ERROR(broadcast(context, {&mask, &scores}, plan));
  if (plan.shape != scores_shape) {
    return invalid(
        context, "mask " + shape_text(mask.shape()) + " does not broadcast to the scores " + shape_text(scores_shape));
  }
  return Status::success();
}

Status read_attributes(const KernelContext& context, int64_t depth, bool has_mask, Attention& a) {
  a.causal = context.attributes && context.attributes->get_int("is_causal", 0) != 0;
  if (a.causal && has_mask) return invalid(context, "a mask and is_causal cannot both be given (as in torch)");
  const bool given = context.attributes && context.attributes->has("scale");
  const double scale =
      given ? context.attributes->get_float("scale", 0.0) : 1.0 / std::sqrt(static_cast<double>(depth));
  if (given && !std::isfinite(scale)) return invalid(context, "attribute scale must be finite");
  a.scale = static_cast<float>(scale);
  return Status::success();
}

// Inputs: q [..., L, E], k [..., S, E], v [..., S, Ev], mask (optional). Attributes:
// is_causal (default 0), scale (default 1/sqrt(E)). Output [..., L, Ev].
Status attention_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 3, 4));
  const Tensor &q = *context.inputs[0], &k = *context.inputs[1], &v = *context.inputs[2];
  const Tensor* mask = optional_input(context, 3);
  EDGERT_RETURN_IF_ERROR(check_operands(context, q, k, v));
  Attention a;
  a.length = q.size(-2), a.depth = q.size(-1), a.source = k.size(-2), a.value_depth = v.size(-1);
  EDGERT_RETURN_IF_ERROR(read_attributes(context, a.depth, mask != nullptr, a));
  Broadcast batches;
  EDGERT_RETURN_IF_ERROR(broadcast_batches(context, q, k, v, batches));
  std::vector<int64_t> scores_shape = batches.shape, shape = batches.shape;
  scores_shape.insert(scores_shape.end(), {a.length, a.source});
  shape.insert(shape.end(), {a.length, a.value_depth});
  EDGERT_RETURN_IF_ERROR(check_size(context, scores_shape, "scores"));
  EDGERT_RETURN_IF_ERROR(check_size(context, shape, "output"));
  const Tensor mask_data = mask ? mask->contiguous() : Tensor();
  a.mask = mask ? &mask_data : nullptr;
  if (mask) EDGERT_RETURN_IF_ERROR(plan_mask(context, mask_data, scores_shape, a.mask_plan));
  Tensor out = Tensor::uninitialized(DType::Float32, shape);
  if (out.numel() > 0) {
    a.entries = batch_entries(batches);
    const int64_t batch = product(batches.shape, 0, batches.shape.size());
    const Tensor cq = q.contiguous(), ck = k.contiguous(), cv = v.contiguous();
    a.q = cq.data_as<float>(), a.k = ck.data_as<float>(), a.v = cv.data_as<float>();
    a.out = out.data_as<float>();
    attend_all(a, batch);
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::scaled_dot_product_attention", attention_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::scaled_dot_product_attention",
                           {{"is_causal", AttributeKind::Int}, {"scale", AttributeKind::Float}});

}  // namespace edgert::kernels
