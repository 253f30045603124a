// Expansion of composite model operators (attention) into the primitive operators they are made
// of: the pass the VM runs before compiling, and what the superoptimizer's partitioner will see.
#pragma once

#include "model/module.h"

namespace weft {

// `module` (deduced) with every composite binding replaced by its expansion in the same block,
// intermediates named VAR.SUFFIX (made unique), re-deduced: the result passes check_module.
Module expand_composites(const Module& module, SymProver& prover);

}  // namespace weft
