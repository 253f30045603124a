// The µGraph IR: one value-semantic Graph type for the kernel, block and thread levels.
//
// A kernel graph's ops are pre-defined operators and graph-defined `kernel` ops whose body is a
// block graph. A block graph's inputs are the kernel op's operands (whole tensors in device
// memory); `iter` ops load the block's tiles from them, loop-stage ops run once per for-loop
// iteration, accumulators carry values out of the loop, post-stage ops run once per block, and
// `save` ops produce the block graph's outputs (whole tensors again). A thread graph is a chain of
// elementwise ops; a block-level `thread` op holds one as its body.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "ir/interface.h"
#include "ir/ops.h"

namespace weft {

enum class Level : uint8_t { kernel, block, thread };
// Block graphs only: loop-stage ops run every iteration, post-stage ops once after the loop.
enum class Stage : uint8_t { loop, post };

std::string_view level_name(Level level);

using ValueId = int32_t;

struct Value {
  std::string name;
  TensorType type;
  SourceLoc loc;
};

struct Graph;

struct Op {
  OpKind kind = OpKind::add;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;
  Stage stage = Stage::loop;          // meaningful in block graphs only
  std::shared_ptr<const Graph> body;  // block graph (kernel op) or thread graph (thread op)
  SourceLoc loc;
};

struct Graph {
  Level level = Level::kernel;
  std::string name;  // program name (kernel level); empty for nested graphs

  // Block level only.
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t threads = 128;  // threads per block: a code-generation choice, not semantics
  int64_t loop = 1;       // for-loop range

  std::vector<Value> values;
  std::vector<ValueId> inputs;   // kernel: program inputs; block/thread: the op's operands
  std::vector<Op> ops;           // definition order (a topological order)
  std::vector<ValueId> outputs;  // kernel/thread: listed outputs; block: save results, in order
  // Kernel level: the interfaces the program declares over its inputs and outputs.
  std::vector<ProgramInterface> interfaces;
  SourceLoc loc;

  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  const TensorType& type(ValueId id) const { return value(id).type; }
  // Value id by name, or -1.
  ValueId find(std::string_view name) const;
  // Index of the op defining each value (-1 for graph inputs).
  std::vector<int> producers() const;
  // For each value, the indices of the ops that read it (in op order).
  std::vector<std::vector<int>> consumers() const;
  InferContext infer_context() const { return InferContext{grid, loop}; }
  int64_t num_blocks() const { return grid[0] * grid[1] * grid[2]; }
};

// Structural equality: names, types, ops, attributes, block parameters, nested bodies, interfaces.
// Source locations are ignored.
bool operator==(const Graph& a, const Graph& b);
bool operator==(const Op& a, const Op& b);

// Elements combined into each result element of `op` (an op of `g`): the contraction size of a
// matmul, the group size of a reduction (its dim's size / `to`), the loop range of a sum or max
// accumulator; 0 for every other operator.
int64_t combined_elements(const Graph& g, const Op& op);

// Throws a UserError at `loc` unless `info` takes `n` operands.
void check_op_arity(const OpInfo& info, size_t n, const SourceLoc& loc);
// Throws a UserError at `loc` unless `info` may appear in a graph of `level` (model-only
// operators appear in none).
void check_op_level(const OpInfo& info, Level level, const SourceLoc& loc);

// Builds a graph op by op, inferring every result type from the operator table. Errors in the
// user's program (bad shapes, unknown names, duplicate names) are UserErrors at the given loc.
class GraphBuilder {
 public:
  explicit GraphBuilder(Level level, std::string name = {});
  // Block level: grid, threads per block and for-loop range (set before adding iterators).
  void set_block_params(std::array<int64_t, 3> grid, int64_t threads, int64_t loop,
                        SourceLoc loc = {});

  ValueId add_input(std::string name, TensorType type, SourceLoc loc = {});
  // Adds an op and returns its results. `names` may be empty (fresh names are made) or give one
  // name per result. Attributes are completed with defaults and normalized.
  std::vector<ValueId> add_op(OpKind kind, std::vector<ValueId> inputs, Attrs attrs = {},
                              std::vector<std::string> names = {}, SourceLoc loc = {},
                              Stage stage = Stage::loop);
  // Single-result convenience.
  ValueId add(OpKind kind, std::vector<ValueId> inputs, Attrs attrs = {}, std::string name = {},
              SourceLoc loc = {}, Stage stage = Stage::loop);
  // A graph-defined kernel (body: a block graph whose inputs match `inputs` in order) or a thread
  // op (body: a thread graph). Results take the body's output types.
  std::vector<ValueId> add_nested(OpKind kind, std::vector<ValueId> inputs, Graph body,
                                  std::vector<std::string> names = {}, SourceLoc loc = {},
                                  Stage stage = Stage::loop);
  void add_output(ValueId id, SourceLoc loc = {});

  const Graph& graph() const { return g_; }
  Graph finish() && { return std::move(g_); }

 private:
  void name_body_inputs_after_operands(Graph& body, const std::vector<ValueId>& operands) const;
  ValueId new_value(std::string name, TensorType type, const SourceLoc& loc);
  std::string fresh_name();
  Graph g_;
  int next_fresh_ = 0;
};

}  // namespace weft
