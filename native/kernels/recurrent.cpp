// lstm and gru (docs/operators.md): torch's nn.LSTM and nn.GRU as one node each, every layer
// and direction of them.
//
// Per layer, the input projection of every time step (and of both directions) is one
// matrix product, x · W_ihᵀ + b_ih for all T·B rows at once (gemm.hpp). Then each time step
// is one small product per direction, h · W_hhᵀ (the directions of a layer are one batched
// gemm call), followed by one pass over the gates that adds b_hh and the input projection,
// applies sigmoid and tanh (from exponentials, with one division per product of gates:
// run_gates) and updates the cell and hidden state in place. The weights are packed into the micro-kernel's
// panels once, when the program prepares (when they are constants), and every buffer a run
// needs is allocated before its first step (h is packed for the step's product into memory
// of the run, so that gemm allocates nothing per step either). Gate order and arithmetic are torch's:
//   LSTM (i, f, g, o): gates = (h·W_hhᵀ + b_hh) + (x·W_ihᵀ + b_ih); c' = σ(f)·c + σ(i)·tanh(g);
//                      h' = σ(o)·tanh(c').
//   GRU (r, z, n):     r = σ(gh_r + gi_r), z = σ(gh_z + gi_z), n = tanh(gi_n + gh_n·r),
//                      h' = (h - n)·z + n, where gh = h·W_hhᵀ + b_hh and gi = x·W_ihᵀ + b_ih.
// Each output is computed by the same float32 operations in the same order for any thread
// count and instruction set.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "gemm.hpp"
#include "gemm_kernels.hpp"
#include "simd.hpp"

namespace edgert::kernels {
namespace {

enum class Cell { Lstm, Gru };

// The node's attributes and what follows from them.
struct Layout {
  Cell cell = Cell::Lstm;
  int64_t hidden = 0;      // H
  int64_t layers = 1;      // L
  int64_t directions = 1;  // D: 2 when bidirectional
  bool batch_first = false;
  bool biases = true;

  int64_t gates() const { return cell == Cell::Lstm ? 4 : 3; }
  int64_t gate_rows() const { return gates() * hidden; }  // G·H
  // Inputs before the weights: x and h0 (and c0 for an LSTM).
  size_t states() const { return cell == Cell::Lstm ? 2 : 1; }
  size_t first_weight() const { return 1 + states(); }
  size_t inputs() const { return first_weight() + static_cast<size_t>(4 * layers * directions); }
  // Input slot of layer `layer`, direction `direction`: which = 0 W_ih, 1 W_hh, 2 b_ih, 3 b_hh.
  size_t slot(int64_t layer, int64_t direction, int64_t which) const {
    return first_weight() + static_cast<size_t>((layer * directions + direction) * 4 + which);
  }
};

const char* cell_name(Cell cell) {
  return cell == Cell::Lstm ? "lstm" : "gru";
}

Status read_layout(const Attributes* attributes, Cell cell, Layout& layout) {
  const KernelContext context;
  layout.cell = cell;
  if (attributes == nullptr || !attributes->has("hidden_size")) {
    return invalid(context, "attribute hidden_size is required");
  }
  layout.hidden = attributes->get_int("hidden_size", 0);
  layout.layers = attributes->get_int("num_layers", 1);
  const int64_t bidirectional = attributes->get_int("bidirectional", 0);
  const int64_t batch_first = attributes->get_int("batch_first", 0);
  const int64_t biases = attributes->get_int("has_biases", 1);
  if (layout.hidden < 1) return invalid(context, "attribute hidden_size must be at least 1");
  if (layout.layers < 1 || layout.layers > 1024) return invalid(context, "attribute num_layers must be in [1, 1024]");
  for (const auto& [name, flag] : {std::pair<const char*, int64_t>{"bidirectional", bidirectional},
                                   {"batch_first", batch_first},
                                   {"has_biases", biases}}) {
    if (flag != 0 && flag != 1) return invalid(context, std::string("attribute ") + name + " must be 0 or 1");
  }
  layout.directions = bidirectional ? 2 : 1;
  layout.batch_first = batch_first != 0;
  layout.biases = biases != 0;
  int64_t count = 0;
  if (!checked_element_count({layout.directions, layout.gate_rows(), layout.hidden}, sizeof(float), &count)) {
    return invalid(context, "attribute hidden_size is too large");
  }
  return Status::success();
}

// One layer's weights, packed for the products.
struct LayerWeights {
  int64_t input_size = 0;
  PackedPanels input;         // W_ih of every direction, stacked: [D·G·H, input_size] as right panels
  Tensor input_bias;          // [D·G·H]: b_ih of every direction (undefined without biases)
  PackedPanels recurrent[2];  // W_hh [G·H, H] of each direction as right panels
  Tensor recurrent_bias[2];   // b_hh [G·H] of each direction (undefined without biases)
};

struct Weights {
  std::vector<LayerWeights> layers;
};

Status check_matrix(const Tensor* tensor, const std::vector<int64_t>& shape, const std::string& what) {
  const KernelContext context;
  if (tensor == nullptr) return invalid(context, what + " is required");
  EDGERT_RETURN_IF_ERROR(check_dtype(context, *tensor, DType::Float32, what.c_str()));
  if (tensor->shape() != shape) {
    return invalid(context, what + " is " + shape_text(tensor->shape()) + ", expected " + shape_text(shape));
  }
  return Status::success();
}

std::string weight_name(const char* kind, int64_t layer, int64_t direction) {
  return std::string(kind) + "_l" + std::to_string(layer) + (direction == 1 ? "_reverse" : "");
}

// The packed weights of every layer from the node's weight inputs (`tensor(slot)`: the input
// at that slot, null when absent).
template <class Get>
Status make_weights(const Layout& layout, Get tensor, Weights& weights) {
  const KernelContext context;
  const int64_t gate_rows = layout.gate_rows(), hidden = layout.hidden, directions = layout.directions;
  weights.layers.resize(static_cast<size_t>(layout.layers));
  for (int64_t layer = 0; layer < layout.layers; ++layer) {
    LayerWeights& made = weights.layers[static_cast<size_t>(layer)];
    const Tensor* first = tensor(layout.slot(layer, 0, 0));
    if (first == nullptr || first->dim() != 2) {
      return invalid(context, weight_name("weight_ih", layer, 0) + " must be a matrix [" + std::to_string(gate_rows) +
                                  ", input size]");
    }
    made.input_size = layer == 0 ? first->shape()[1] : directions * hidden;
    std::vector<float> stacked(static_cast<size_t>(directions * gate_rows * made.input_size));
    std::vector<float> stacked_bias(layout.biases ? static_cast<size_t>(directions * gate_rows) : 0);
    for (int64_t direction = 0; direction < directions; ++direction) {
      const Tensor* input = tensor(layout.slot(layer, direction, 0));
      const Tensor* recurrent = tensor(layout.slot(layer, direction, 1));
      EDGERT_RETURN_IF_ERROR(
          check_matrix(input, {gate_rows, made.input_size}, weight_name("weight_ih", layer, direction)));
      EDGERT_RETURN_IF_ERROR(check_matrix(recurrent, {gate_rows, hidden}, weight_name("weight_hh", layer, direction)));
      const Tensor w_ih = input->contiguous(), w_hh = recurrent->contiguous();
      std::copy_n(w_ih.data_as<float>(), gate_rows * made.input_size,
                  stacked.data() + direction * gate_rows * made.input_size);
      made.recurrent[direction] = pack_right_panels(w_hh.data_as<float>(), RightLayout::NByK, gate_rows, hidden);
      const Tensor* bias_ih = tensor(layout.slot(layer, direction, 2));
      const Tensor* bias_hh = tensor(layout.slot(layer, direction, 3));
      if (!layout.biases) {
        if (bias_ih != nullptr || bias_hh != nullptr) {
          return invalid(context, "biases are given but attribute has_biases is 0");
        }
        continue;
      }
      EDGERT_RETURN_IF_ERROR(check_matrix(bias_ih, {gate_rows}, weight_name("bias_ih", layer, direction)));
      EDGERT_RETURN_IF_ERROR(check_matrix(bias_hh, {gate_rows}, weight_name("bias_hh", layer, direction)));
      const Tensor b_ih = bias_ih->contiguous();
      std::copy_n(b_ih.data_as<float>(), gate_rows, stacked_bias.data() + direction * gate_rows);
      made.recurrent_bias[direction] = Tensor::uninitialized(DType::Float32, {gate_rows});
      const Tensor b_hh = bias_hh->contiguous();
      std::copy_n(b_hh.data_as<float>(), gate_rows, made.recurrent_bias[direction].data_as<float>());
    }
    made.input = pack_right_panels(stacked.data(), RightLayout::NByK, directions * gate_rows, made.input_size);
    if (layout.biases) {
      made.input_bias = Tensor::uninitialized(DType::Float32, {directions * gate_rows});
      std::copy(stacked_bias.begin(), stacked_bias.end(), made.input_bias.data_as<float>());
    }
  }
  return Status::success();
}

// ---------------------------------------------------------------- one time step's gates

// What the gate pass of one step reads and writes, per direction.
struct StepDirection {
  const float* projected;  // the input projection of row (t, b) at projected + row(b) * projected_stride
  const float* recurrent;  // h·W_hhᵀ of batch row b at recurrent + b * G·H
  const float* bias;       // b_hh [G·H], or null
  float* hidden;           // h of batch row b at hidden + b * H (read, then written)
  float* cell;             // c (LSTM), likewise
  float* output;           // the layer's output of row (t, b) at output + row(b) * output_stride
};

struct Step {
  Cell cell;
  int64_t hidden, batch;
  int64_t projected_stride, output_stride;
  int64_t row_step;  // row(b) of direction d = row_firsts[d] + b * row_step (its own t)
  StepDirection directions[2];
  int64_t row_firsts[2];
  int64_t direction_count;
};

// e^x for x clamped to [-kBound, kBound], with exp's arithmetic for normal results
// (simd::detail::exp_normal); a NaN stays NaN. Every gate is a function of e^-x (or e^-2x)
// whose value no longer changes in float32 past the bound, and products of two such
// exponentials stay finite.
constexpr float kBound = 40.0f;

template <class V>
EDGERT_SIMD_INLINE V exp_bounded(const V& x) {
  V t = simd::select(x < -kBound, simd::splat<V>(-kBound), x);
  t = simd::select(t > kBound, simd::splat<V>(kBound), t);
  return simd::detail::exp_normal(t);
}

// The gates of every batch row of every direction of one step. With e_x = e^-x, σ(x) =
// 1 / (1 + e_x) and tanh(x) = (1 - e_2x) / (1 + e_2x), so that products of gates share one
// division:
//   LSTM: c' = c / (1 + e_f) + (1 - e_2g) / ((1 + e_i)·(1 + e_2g)),
//         h' = (1 - e_2c') / ((1 + e_o)·(1 + e_2c'))
//   GRU:  r = 1 / (1 + e_r), n's exponential e_2n with n = gi_n + gh_n·r,
//         h' = (h - n)·σ(z) + n = (h·(1 + e_2n) + (1 - e_2n)·e_z) / ((1 + e_z)·(1 + e_2n))
// where each gate's argument is gh + gi (gh = h·W_hhᵀ + b_hh). Each element takes the same
// float32 operations in the same order at every vector width.
void run_gates(const Step& step) {
  simd::dispatch([&step](auto width) {
    using V = typename decltype(width)::Float;
    constexpr int64_t kLanes = decltype(width)::lanes;
    const int64_t hidden = step.hidden, gate_rows = (step.cell == Cell::Lstm ? 4 : 3) * hidden;
    const V one = simd::splat<V>(1.0f);
    for (int64_t d = 0; d < step.direction_count; ++d) {
      const StepDirection& direction = step.directions[d];
      for (int64_t b = 0; b < step.batch; ++b) {
        const int64_t row = step.row_firsts[d] + b * step.row_step;
        const float* gi = direction.projected + row * step.projected_stride;
        const float* gh = direction.recurrent + b * gate_rows;
        float* h = direction.hidden + b * hidden;
        float* out = direction.output + row * step.output_stride;
        for (int64_t j = 0; j < hidden; j += kLanes) {
          const int64_t count = std::min<int64_t>(kLanes, hidden - j);
          const auto load = [count](const float* data) {
            return count == kLanes ? simd::load<V>(data) : simd::load_partial<V>(data, count);
          };
          const auto store = [count](float* data, const V& value) {
            if (count == kLanes) {
              simd::store(data, value);
            } else {
              simd::store_partial(data, count, value);
            }
          };
          // gh + b_hh for gate g (torch's h·W_hhᵀ + b_hh)
          const auto from_hidden = [&](int64_t gate) {
            const V product = load(gh + gate * hidden + j);
            return direction.bias ? product + load(direction.bias + gate * hidden + j) : product;
          };
          if (step.cell == Cell::Lstm) {
            float* c = direction.cell + b * hidden;
            const V e_i = exp_bounded(-(from_hidden(0) + load(gi + j)));
            const V e_f = exp_bounded(-(from_hidden(1) + load(gi + hidden + j)));
            const V g = from_hidden(2) + load(gi + 2 * hidden + j);
            const V e_g = exp_bounded(-(g + g));
            const V e_o = exp_bounded(-(from_hidden(3) + load(gi + 3 * hidden + j)));
            const V cell = load(c + j) / (one + e_f) + (one - e_g) / ((one + e_i) * (one + e_g));
            const V e_c = exp_bounded(-(cell + cell));
            const V next = (one - e_c) / ((one + e_o) * (one + e_c));
            store(c + j, cell);
            store(h + j, next);
            store(out + j, next);
          } else {
            const V r = one / (one + exp_bounded(-(from_hidden(0) + load(gi + j))));
            const V e_z = exp_bounded(-(from_hidden(1) + load(gi + hidden + j)));
            const V n = load(gi + 2 * hidden + j) + from_hidden(2) * r;
            const V e_n = exp_bounded(-(n + n));
            const V next = (load(h + j) * (one + e_n) + (one - e_n) * e_z) / ((one + e_z) * (one + e_n));
            store(h + j, next);
            store(out + j, next);
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------- the layers

struct Run {
  const Layout& layout;
  int64_t steps, batch;  // T, B
  Tensor* hidden_out;    // h_n [L·D, B, H], the running state
  Tensor* cell_out;      // c_n (LSTM), likewise; null for a GRU
};

// One layer: `input` [rows, input_size] (rows in the input's order) to `output` [rows, D·H].
// `panels`: memory for each direction's h in left panels (left_panels_size floats each), or
// null when the batch is small enough for gemm's path that reads h where it lies.
void run_layer(const Run& run, const LayerWeights& weights, int64_t layer, const float* input, float* output,
               float* projected, float* recurrent, float* panels) {
  const Layout& layout = run.layout;
  const int64_t hidden = layout.hidden, gate_rows = layout.gate_rows(), directions = layout.directions;
  const int64_t rows = run.steps * run.batch;
  GemmEpilogue projection_bias;
  projection_bias.bias = layout.biases ? weights.input_bias.data_as<float>() : nullptr;
  GemmOperands all_steps{input, nullptr, projected};
  all_steps.packed_b = weights.input.matrix(0);
  gemm({all_steps}, rows, directions * gate_rows, weights.input_size, RightLayout::NByK, projection_bias);

  Step step{};
  step.cell = layout.cell;
  step.hidden = hidden;
  step.batch = run.batch;
  step.projected_stride = directions * gate_rows;
  step.output_stride = directions * hidden;
  step.direction_count = directions;
  // Row of (t, b): t·B + b (time first) or b·T + t (batch first).
  step.row_step = layout.batch_first ? run.steps : 1;
  const int64_t time_step = layout.batch_first ? 1 : run.batch;
  std::vector<GemmOperands> products;
  float* left[2] = {nullptr, nullptr};  // each direction's h in panels, when `panels` is given
  for (int64_t d = 0; d < directions; ++d) {
    float* h = run.hidden_out->data_as<float>() + (layer * directions + d) * run.batch * hidden;
    float* c = run.cell_out ? run.cell_out->data_as<float>() + (layer * directions + d) * run.batch * hidden : nullptr;
    float* product = recurrent + d * run.batch * gate_rows;
    StepDirection& direction = step.directions[d];
    direction.projected = projected + d * gate_rows;
    direction.recurrent = product;
    direction.bias = layout.biases ? weights.recurrent_bias[d].data_as<float>() : nullptr;
    direction.hidden = h;
    direction.cell = c;
    direction.output = output + d * hidden;
    GemmOperands operands{h, nullptr, product};
    operands.packed_b = weights.recurrent[d].matrix(0);
    if (panels) operands.packed_a = left[d] = panels + d * left_panels_size(run.batch, hidden);
    products.push_back(operands);
  }
  for (int64_t s = 0; s < run.steps; ++s) {
    for (int64_t d = 0; panels && d < directions; ++d)
      pack_left_rows(step.directions[d].hidden, run.batch, hidden, left[d]);
    gemm(products, run.batch, gate_rows, hidden, RightLayout::NByK, GemmEpilogue{});
    for (int64_t d = 0; d < directions; ++d) {
      const int64_t t = d == 0 ? s : run.steps - 1 - s;
      step.row_firsts[d] = t * time_step;
    }
    run_gates(step);
  }
}

// The initial state `given` ([L·D, B, H], or null: zeros) into `state`.
Status initial_state(const Run& run, const Tensor* given, const char* what, Tensor& state) {
  const KernelContext context;
  const std::vector<int64_t> shape{run.layout.layers * run.layout.directions, run.batch, run.layout.hidden};
  state = Tensor::uninitialized(DType::Float32, shape);
  if (given == nullptr) {
    std::fill_n(state.data_as<float>(), state.numel(), 0.0f);
    return Status::success();
  }
  EDGERT_RETURN_IF_ERROR(check_dtype(context, *given, DType::Float32, what));
  if (given->shape() != shape) {
    return invalid(context, std::string(what) + " is " + shape_text(given->shape()) + ", expected " +
                                shape_text(shape) + " ([num_layers · directions, batch, hidden_size])");
  }
  const Tensor data = given->contiguous();
  std::copy_n(data.data_as<float>(), state.numel(), state.data_as<float>());
  return Status::success();
}

Status check_size(const std::vector<int64_t>& shape, const char* what) {
  int64_t count = 0;
  if (checked_element_count(shape, sizeof(float), &count)) return Status::success();
  return invalid(KernelContext(), std::string("the ") + what + " " + shape_text(shape) + " would be too large");
}

Status prepare(const PrepareContext& context, Cell cell, std::shared_ptr<const void>& state) {
  Layout layout;
  EDGERT_RETURN_IF_ERROR(read_layout(context.attributes, cell, layout));
  if (context.constants.size() != layout.inputs()) return Status::success();  // the kernel reports it
  for (int64_t layer = 0; layer < layout.layers; ++layer) {
    for (int64_t direction = 0; direction < layout.directions; ++direction) {
      for (int64_t which = 0; which < (layout.biases ? 4 : 2); ++which) {
        if (context.constants[layout.slot(layer, direction, which)] == nullptr) return Status::success();
      }
    }
  }
  auto weights = std::make_shared<Weights>();
  EDGERT_RETURN_IF_ERROR(make_weights(layout, [&](size_t slot) { return context.constants[slot]; }, *weights));
  state = std::move(weights);
  return Status::success();
}

// Inputs: x ([T, B, I], or [B, T, I] with batch_first), h0 and (LSTM) c0 [L·D, B, H] (each
// optional: zeros), then for each layer and direction (forward, reverse) W_ih [G·H, I_l],
// W_hh [G·H, H], b_ih [G·H], b_hh [G·H] (the biases absent when has_biases is 0), I_l = I for
// the first layer and D·H after it. Attributes: hidden_size, num_layers (default 1),
// bidirectional, batch_first (default 0), has_biases (default 1). Outputs: the last layer's h
// of every step ([T, B, D·H], or [B, T, D·H]), h_n and (LSTM) c_n [L·D, B, H].
Status recurrent_kernel(KernelContext& context, Cell cell) {
  Layout layout;
  EDGERT_RETURN_IF_ERROR(read_layout(context.attributes, cell, layout));
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, layout.inputs()));
  if (context.inputs.size() != layout.inputs()) {
    return invalid(context, "expected " + std::to_string(layout.inputs()) + " inputs (x, the initial state" +
                                (cell == Cell::Lstm ? "s" : "") + " and 4 weights per layer and direction), got " +
                                std::to_string(context.inputs.size()));
  }
  const size_t outputs = cell == Cell::Lstm ? 3 : 2;
  if (context.outputs->size() != outputs) {
    return invalid(context, std::string(cell_name(cell)) + " has " + std::to_string(outputs) + " outputs, the node " +
                                std::to_string(context.outputs->size()));
  }
  const Tensor& x = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_dtype(context, x, DType::Float32, "x"));
  if (x.dim() != 3) {
    return invalid(context,
                   "x must be [T, B, input] (or [B, T, input] with batch_first), got " + shape_text(x.shape()));
  }
  Weights made;
  const Weights* weights = static_cast<const Weights*>(context.prepared);
  if (weights == nullptr) {
    EDGERT_RETURN_IF_ERROR(make_weights(layout, [&](size_t slot) { return context.inputs[slot]; }, made));
    weights = &made;
  }
  const int64_t steps = x.size(layout.batch_first ? 1 : 0), batch = x.size(layout.batch_first ? 0 : 1);
  const int64_t features = x.size(2);
  if (features != weights->layers[0].input_size) {
    return invalid(context, "x has " + std::to_string(features) + " features, weight_ih_l0 takes " +
                                std::to_string(weights->layers[0].input_size));
  }
  const int64_t hidden = layout.hidden, directions = layout.directions, rows = steps * batch;
  std::vector<int64_t> shape = x.shape();
  shape[2] = directions * hidden;
  EDGERT_RETURN_IF_ERROR(check_size(shape, "output"));
  EDGERT_RETURN_IF_ERROR(check_size({rows, directions * layout.gate_rows()}, "input projection"));
  Tensor output = Tensor::uninitialized(DType::Float32, shape);
  Tensor hidden_state, cell_state;
  Run run{layout, steps, batch, &hidden_state, cell == Cell::Lstm ? &cell_state : nullptr};
  EDGERT_RETURN_IF_ERROR(initial_state(run, optional_input(context, 1), "h0", hidden_state));
  if (cell == Cell::Lstm) EDGERT_RETURN_IF_ERROR(initial_state(run, optional_input(context, 2), "c0", cell_state));
  if (rows > 0) {
    const Tensor input = x.contiguous();
    // Every buffer of the run: the input projection of all steps, the recurrent products of
    // one step, and the output of the layers before the last.
    Tensor projected = Tensor::uninitialized(DType::Float32, {rows * directions * layout.gate_rows()});
    Tensor recurrent = Tensor::uninitialized(DType::Float32, {directions * batch * layout.gate_rows()});
    Tensor between = layout.layers > 1 ? Tensor::uninitialized(DType::Float32, {rows * directions * hidden}) : Tensor();
    // Batches over kMaxBatchRows go through gemm's blocked path, which reads h in panels:
    // packed here, into memory allocated once, not by gemm at each step.
    Tensor panels = batch > kMaxBatchRows
                        ? Tensor::uninitialized(DType::Float32, {directions * left_panels_size(batch, hidden)})
                        : Tensor();
    const float* layer_input = input.data_as<float>();
    for (int64_t layer = 0; layer < layout.layers; ++layer) {
      // A layer reads its input only in the projection, before its first step: the layers
      // between the first and the last read and write the same buffer.
      float* layer_output = layer + 1 == layout.layers ? output.data_as<float>() : between.data_as<float>();
      run_layer(run, weights->layers[static_cast<size_t>(layer)], layer, layer_input, layer_output,
                projected.data_as<float>(), recurrent.data_as<float>(), panels.data_as<float>());
      layer_input = layer_output;
    }
  }
  (*context.outputs)[0] = std::move(output);
  (*context.outputs)[1] = std::move(hidden_state);
  if (cell == Cell::Lstm) (*context.outputs)[2] = std::move(cell_state);
  return Status::success();
}

Status lstm_kernel(KernelContext& context) {
  return recurrent_kernel(context, Cell::Lstm);
}
Status gru_kernel(KernelContext& context) {
  return recurrent_kernel(context, Cell::Gru);
}
Status prepare_lstm(const PrepareContext& context, std::shared_ptr<const void>& state) {
  return prepare(context, Cell::Lstm, state);
}
Status prepare_gru(const PrepareContext& context, std::shared_ptr<const void>& state) {
  return prepare(context, Cell::Gru, state);
}

}  // namespace

EDGERT_REGISTER_PREPARED_OPERATOR("edgert::lstm", lstm_kernel, prepare_lstm);
EDGERT_OPERATOR_ATTRIBUTES("edgert::lstm", {{"hidden_size", AttributeKind::Int},
                                            {"num_layers", AttributeKind::Int},
                                            {"bidirectional", AttributeKind::Int},
                                            {"batch_first", AttributeKind::Int},
                                            {"has_biases", AttributeKind::Int}});
EDGERT_REGISTER_PREPARED_OPERATOR("edgert::gru", gru_kernel, prepare_gru);
EDGERT_OPERATOR_ATTRIBUTES("edgert::gru", {{"hidden_size", AttributeKind::Int},
                                           {"num_layers", AttributeKind::Int},
                                           {"bidirectional", AttributeKind::Int},
                                           {"batch_first", AttributeKind::Int},
                                           {"has_biases", AttributeKind::Int}});

}  // namespace edgert::kernels
