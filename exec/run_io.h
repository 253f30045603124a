// Arguments from and results to NumPy archives for `weft model run`: parameters are matched by
// name; results are named "result" (a tensor or integer) or "result.0", "result.1.0", ... (tuples).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "exec/npz.h"
#include "exec/vm.h"

namespace weft {

// The function `name` of `module`; a UserError at `where` naming the functions there are
// otherwise.
const Function& function_to_run(const Module& module, const std::string& name,
                                const SourceLoc& where);

// The argument for parameter `p` from `array` (`what` names where it came from in errors):
// tensors and shapes take the array's values as they are (any float or integer NumPy type; the
// VM rounds a tensor argument to the parameter's dtype, to nearest even via f32, when the run
// binds it); an integer parameter needs a 0-d integral array.
// Throws UserError at `where` otherwise, and at the parameter for a tuple parameter.
VmValue argument_value(const Param& p, const NpyArray& array, const std::string& what,
                       const SourceLoc& where);

// One value per parameter of `fn`, from the archive's entry of the same name. Throws UserError
// (naming the file and the parameter) for a missing entry, a tuple parameter, or an integer
// parameter given a non-integral array or one that is not a scalar.
std::vector<VmValue> arguments_from_npz(const Function& fn, const NpzArrays& arrays,
                                        const std::string& path);

// The element type to write each weight of `weights` (by parameter name of `module`'s functions)
// as: its parameter's dtype's NumPy type (<f4 where no parameter names it).
std::map<std::string, NpyElement> weight_elements(
    const Module& module, const std::map<std::string, Tensor<double>>& weights);

// Flattens a result into named arrays (integers become 0-d arrays).
std::map<std::string, Tensor<double>> result_arrays(const VmValue& result);
// The element type to write each of those arrays as, from the result's type `ret`: a tensor's
// dtype's closest NumPy type (npy_element); integers and anything unnamed here <f4.
std::map<std::string, NpyElement> result_elements(const MType& ret);

}  // namespace weft
