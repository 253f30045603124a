// C++ exceptions as Python exceptions: UserError keeps its location (file, line, column);
// InternalError and any other C++ exception are bugs in weft (weft.InternalError). The classes
// live in python/weft/errors.py, so they can be raised and caught from Python too.
#include <new>

#include "core/error.h"
#include "python/src/bindings.h"

namespace weft::python {
namespace {

// A class of weft.errors. Imported on first use: never during module initialization, when the
// weft package is itself being imported.
nb::object error_class(const char* name) {
  return nb::module_::import_("weft.errors").attr(name);
}

void raise_user_error(const UserError& e) {
  nb::object cls = error_class("UserError");
  const SourceLoc& loc = e.loc();
  nb::object file = loc.file.empty() ? nb::none() : nb::object(nb::str(loc.file.c_str()));
  nb::object line = loc.line > 0 ? nb::object(nb::int_(loc.line)) : nb::none();
  nb::object column = loc.col > 0 ? nb::object(nb::int_(loc.col)) : nb::none();
  nb::object exc = cls(nb::str(e.what()), nb::str(e.message().c_str()), file, line, column);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

void raise_internal_error(const std::string& what) {
  nb::object cls = error_class("InternalError");
  PyErr_SetObject(cls.ptr(), cls(nb::str(what.c_str())).ptr());
}

}  // namespace

void bind_errors(nb::module_&) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const nb::python_error&) {
      throw;  // a Python exception passing through C++: nanobind restores it
    } catch (const nb::builtin_exception&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;  // MemoryError
    } catch (const UserError& e) {
      raise_user_error(e);
    } catch (const InternalError& e) {
      raise_internal_error(e.what());
    } catch (const std::exception& e) {
      raise_internal_error(std::string("internal error (a bug in weft, please report it): ") +
                           e.what());
    }
  });
}

}  // namespace weft::python
