// The _weft extension module: its parts, registered in order (errors first, so every later
// binding's C++ exceptions reach Python as weft.UserError / weft.InternalError).
#include "python/src/bindings.h"

NB_MODULE(_weft, m) {
  m.doc() = "weft's C++ core (use the weft package, not this module)";
  m.attr("__version__") = WEFT_VERSION;
  weft::python::bind_errors(m);
  weft::python::bind_program(m);
  weft::python::bind_optimize(m);
  weft::python::bind_execute(m);
  weft::python::bind_model(m);
  weft::python::bind_model_dir(m);
  weft::python::bind_megakernel(m);
}
