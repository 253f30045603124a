// The parts of the _weft extension module (python/weft wraps them in the public API), each
// registered by its own file; the work is the driver's (driver/), as for the CLI.
#pragma once

#include <nanobind/nanobind.h>

namespace weft::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);    // errors.cpp: UserError, InternalError
void bind_program(nb::module_& m);   // program.cpp: Graph, parse, load, check, dot, GraphBuilder
void bind_optimize(nb::module_& m);  // optimize.cpp: optimize with progress and interruption
void bind_execute(nb::module_& m);   // execute.cpp: verify, run, compile
void bind_model(nb::module_& m);     // model.cpp: ModelCore (.wmod, .onnx: load, print, check, run)
void bind_model_dir(nb::module_& m);   // model_dir.cpp: compile_model_dir, CompiledDirCore
void bind_megakernel(nb::module_& m);  // megakernel.cpp: MegakernelCore, megakernel_steps

}  // namespace weft::python
