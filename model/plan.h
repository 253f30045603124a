// Memory planning with symbolic shapes: per function, the storage every intermediate tensor lives
// in. Liveness follows aliases (tuple, item, match_cast, reshape); a freed storage is reused by a
// later tensor whose size is provably no larger; when every storage has an upper bound from the
// variables' bounds the function's plan is static (one arena, fixed offsets). The VM executes
// with the plan; docs/model-layer.md describes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/module.h"

namespace weft {

// Where one tensor produced by a binding lives.
enum class AllocPlacement : uint8_t {
  storage,  // in a storage of the function's plan (reused; freed with the frame)
  output,   // escapes through the result: allocated on its own, owned by the caller
  dynamic,  // its size is unknown (rank-only type): allocated on its own at run time
};

struct PlannedAlloc {
  int binding = 0;        // index of the binding in the function (blocks flattened)
  std::string var;        // its name
  std::vector<int> path;  // the leaf's field path in a tuple result ({} for a tensor)
  SymExpr bytes;          // numel * element size (0 when dynamic)
  int last_use = 0;       // the last binding (alias-extended) that reads it
  AllocPlacement placement = AllocPlacement::storage;
  int storage = -1;  // placement == storage
};

struct PlannedStorage {
  SymExpr bytes;                 // the size of its first tensor; later ones are provably <=
  std::optional<int64_t> upper;  // its bound from the variables' bounds
  int first = 0, last = 0;       // bindings over which it is in use
  int64_t offset = 0;            // in the arena, when the plan is static
};

struct FunctionPlan {
  std::string function;
  std::vector<PlannedAlloc> allocs;  // in binding order
  std::vector<PlannedStorage> storages;
  bool is_static = false;  // every storage bounded: one arena of arena_bytes at fixed offsets
  int64_t arena_bytes = 0;
  // Over the intermediates of known size (placement storage): each in its own buffer (naive)
  // and the storages' sizes summed (planned). Dynamic ones are allocated on their own in both.
  SymExpr naive_bytes;
  SymExpr planned_bytes;
  SymExpr output_bytes;  // the tensors that escape through the result
};

struct ModulePlan {
  int element_bytes = 0;  // 0: each tensor's declared dtype size
  std::vector<FunctionPlan> functions;
  const FunctionPlan* find(std::string_view function) const;
};

struct PlanOptions {
  // Bytes per element for every tensor, whatever its dtype (the VM stores f64: 8); 0 uses the
  // declared dtype's size.
  int element_bytes = 0;
  int64_t alignment = 64;  // of arena offsets
};

// Whether a call's result is its operand's elements under another shape (a reshape): it
// allocates nothing and aliases its operand's allocations, as tuples and items do; the VM makes
// it a view.
bool is_view(const Call& call);

// Plans every function of a deduced module. Deterministic.
ModulePlan plan_memory(const Module& module, SymProver& prover, const PlanOptions& options = {});

// The text form of a plan (golden-tested), with the three figures per function evaluated at
// `binding` when given (variables it lacks are left symbolic): intermediates in their own buffers
// (naive), the planned storages, and the live peak (the least any plan could use).
std::string plan_str(const ModulePlan& plan, const Module& module,
                     const std::optional<SymBinding>& binding = std::nullopt);

// The largest sum of sizes of tensors simultaneously live in storage, at `binding`: a lower bound
// for every plan (and so for the planned figure).
int64_t live_peak_bytes(const FunctionPlan& plan, const SymBinding& binding);

}  // namespace weft
