// Model-level values at a binding of the symbolic variables: a call's attributes as the table's
// and a tensor type as a fixed shape. What the VM, the partitioner and the rewriter read.
#pragma once

#include <optional>

#include "core/error.h"
#include "ir/attrs.h"
#include "ir/ops.h"
#include "ir/sym_attrs.h"
#include "model/types.h"
#include "sym/evaluate.h"

namespace weft {

// A binding's model attributes as the table's: symbolic values evaluated at `heap`. Throws
// UserError at `loc` when one cannot be.
Attrs evaluate_attrs(const MAttrs& attrs, const SymBinding& heap, const SourceLoc& loc);

// A tensor type with every dim evaluated at `heap`; nullopt for a non-tensor, a rank-only tensor
// or a dim whose variables `heap` does not bind (an empty heap: only constant dims).
std::optional<TensorType> tensor_type_at(const MType& type, const SymBinding& heap);

}  // namespace weft
