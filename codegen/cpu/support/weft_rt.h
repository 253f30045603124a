// The interface between generated CPU code and the runtime that loads it: the runtime passes a
// weft_rt to the unit's weft_main (codegen/cpu/emit_cpu.h) and the generated code calls back
// through it. Included by the runtime and pasted into every generated unit.
#pragma once

#include <stdint.h>

struct weft_rt {
  // Calls fn(ctx, i) for every i in [0, n), in any order and concurrently; returns when all are
  // done.
  void (*parallel_for)(int64_t n, void (*fn)(void* ctx, int64_t i), void* ctx);
};
