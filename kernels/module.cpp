// The importable module `activations_ext._C`. Loading it runs the static registrations of the `act`
// ops, which users reach through torch.ops.act; its functions report what the build holds.
#include <Python.h>

#include <array>
#include <stdexcept>
#include <utility>
#include <vector>

#include "activations.h"
#include "error_text.h"
#include "launch_plan.h"
#include "strided_view.h"

namespace {

PyObject* cpu_loop(PyObject*, PyObject*) { return PyUnicode_FromString(act::cpu_loop_name()); }

// Each entry as (name, (op names...)): the names its schemas begin with ("selu", "selu_", "selu.out", ...).
template <size_t N>
PyObject* named_ops(const std::vector<std::pair<const char*, std::array<const char*, N>>>& entries) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(entries.size()));
  if (tuple == nullptr) return nullptr;
  for (size_t i = 0; i < entries.size(); ++i) {
    PyObject* names = PyTuple_New(N);
    PyObject* entry = names == nullptr ? nullptr : Py_BuildValue("(sN)", entries[i].first, names);
    if (entry == nullptr) {
      Py_XDECREF(names);
      Py_DECREF(tuple);
      return nullptr;
    }
    for (size_t k = 0; k < N; ++k) {
      PyTuple_SetItem(names, k, PyUnicode_FromString(act::schema_name(entries[i].second[k]).c_str()));  // steals it
    }
    PyTuple_SetItem(tuple, i, entry);  // steals the reference
  }
  return tuple;
}

// ACT_ACTIVATIONS in order, each as (name, (forward, in-place, out=, backward)). The Python side's catalog must
// describe exactly these.
PyObject* activations(PyObject*, PyObject*) {
  return named_ops<4>({
#define ACT_ENTRY(Op)                                                                                         \
  {act::Op::name,                                                                                             \
   {act::Op::schemas.forward, act::Op::schemas.inplace, act::Op::schemas.out, act::Op::schemas.backward}},
      ACT_ACTIVATIONS(ACT_ENTRY)
#undef ACT_ENTRY
  });
}

// ACT_GATED in order, each as (activation name, (merged, merged out=, merged backward, pair, pair out=, pair
// backward)).
PyObject* gated(PyObject*, PyObject*) {
  return named_ops<6>({
#define ACT_ENTRY(Op)                                                                                         \
  {act::Op::name,                                                                                             \
   {act::Op::gated.merged, act::Op::gated.merged_out, act::Op::gated.merged_backward, act::Op::gated.pair,    \
    act::Op::gated.pair_out, act::Op::gated.pair_backward}},
      ACT_GATED(ACT_ENTRY)
#undef ACT_ENTRY
  });
}

// The int64s of a Python sequence, or false with a Python error set (the limited API has no fast access).
bool int64s(PyObject* sequence, std::vector<int64_t>& values) {
  const Py_ssize_t n = PySequence_Size(sequence);
  if (n < 0) return false;
  values.resize(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_GetItem(sequence, i);
    if (item == nullptr) return false;
    values[i] = PyLong_AsLongLong(item);
    Py_DECREF(item);
  }
  return !PyErr_Occurred();
}

// launch_plans(sizes, strides, addresses, item_size, random, sms, resident_threads, dram_bytes_per_sm_cycle,
// resident_blocks): the CUDA launches of a view, as for_each_part and plan_launch make them, for tests.
// sizes innermost first; strides one sequence per operand (the output first), in elements; addresses the
// operands' data addresses; resident_blocks per unroll 0..kMaxUnroll. A list of dicts, one per launch.
PyObject* launch_plans(PyObject*, PyObject* args) {
  PyObject *sizes_arg, *strides_arg, *addresses_arg, *blocks_arg;
  int item_size, random;
  long long sms, resident_threads;
  double dram;
  if (!PyArg_ParseTuple(args, "OOOipLLdO", &sizes_arg, &strides_arg, &addresses_arg, &item_size, &random, &sms,
                        &resident_threads, &dram, &blocks_arg)) {
    return nullptr;
  }
  std::vector<int64_t> sizes, addresses, blocks;
  if (!int64s(sizes_arg, sizes) || !int64s(addresses_arg, addresses) || !int64s(blocks_arg, blocks)) return nullptr;
  act::StridedView view;
  view.ndim = static_cast<int>(sizes.size());
  view.operands = static_cast<int>(addresses.size());
  if (view.ndim < 1 || view.ndim > act::kMaxDims || view.operands < 1 || view.operands > act::kMaxOperands ||
      blocks.size() != act::kMaxUnroll + 1 || PySequence_Size(strides_arg) != view.operands || item_size < 1) {
    PyErr_SetString(PyExc_ValueError, "launch_plans: arguments out of range");
    return nullptr;
  }
  act::OpTraits traits;
  traits.item_size = item_size;
  traits.random = random != 0;
  for (int u = 0; u <= act::kMaxUnroll; ++u) traits.resident_blocks[u] = static_cast<int>(blocks[u]);
  for (int k = 0; k < view.operands; ++k) {
    std::vector<int64_t> strides;
    PyObject* operand = PySequence_GetItem(strides_arg, k);
    const bool ok = operand != nullptr && int64s(operand, strides);
    Py_XDECREF(operand);
    if (!ok) return nullptr;
    if (strides.size() != sizes.size()) {
      PyErr_SetString(PyExc_ValueError, "launch_plans: one stride per dimension and operand");
      return nullptr;
    }
    for (int d = 0; d < view.ndim; ++d) view.strides[k][d] = strides[d];
    view.data[k] = reinterpret_cast<char*>(static_cast<uintptr_t>(addresses[k]));
  }
  for (int d = 0; d < view.ndim; ++d) view.sizes[d] = sizes[d];
  const act::DeviceLimits gpu{0, sms, resident_threads, dram};

  PyObject* plans = PyList_New(0);
  if (plans == nullptr) return nullptr;
  try {
    act::for_each_part(view, item_size, [&](const act::StridedView& part) {
      const int64_t index_base = (part.data[0] - view.data[0]) / item_size;
      const act::LaunchPlan plan = act::plan_launch(part, index_base, traits, gpu);
      PyObject* part_sizes = PyTuple_New(part.ndim);
      if (part_sizes == nullptr) throw std::runtime_error("");
      for (int d = 0; d < part.ndim; ++d) {
        PyTuple_SetItem(part_sizes, d, PyLong_FromLongLong(part.sizes[d]));  // steals it
      }
      const bool compiled =
          act::plannable(plan.dims, plan.vec, plan.unroll, traits.random, act::pack_elements(item_size, traits.random));
      PyObject* entry = Py_BuildValue(
          "{s:L,s:N,s:i,s:i,s:i,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:O}", "index_base", (long long)index_base, "sizes",
          part_sizes, "dims", plan.dims, "vec", plan.vec, "unroll", plan.unroll, "cols", (long long)plan.cols, "head",
          (long long)plan.head, "tail", (long long)plan.tail, "row_packs", (long long)plan.row_packs, "row_singles",
          (long long)plan.row_singles, "n_packs", (long long)plan.n_packs, "n_singles", (long long)plan.n_singles,
          "blocks", (long long)plan.blocks, "compiled", compiled ? Py_True : Py_False);
      if (entry == nullptr) throw std::runtime_error("");
      const int appended = PyList_Append(plans, entry);
      Py_DECREF(entry);
      if (appended != 0) throw std::runtime_error("");
    });
  } catch (const std::exception& e) {
    Py_DECREF(plans);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  return plans;
}

PyMethodDef methods[] = {
    {"activations", activations, METH_NOARGS,
     "The elementwise activations this build registers: (name, (forward, in-place, out=, backward op names))."},
    {"gated", gated, METH_NOARGS,
     "The activations with gated forms: (name, (merged, merged out=, merged backward, pair, pair out=, pair "
     "backward op names))."},
    {"cpu_loop", cpu_loop, METH_NOARGS,
     "Which compiled copy of the CPU loop runs here: 'x86-64-v4', 'x86-64-v3' (ATEN_CPU_CAPABILITY=avx2) or "
     "'baseline' (ATEN_CPU_CAPABILITY=default); ReLU's float32 and float64 rows out of place take at most "
     "x86-64-v3."},
    {"launch_plans", launch_plans, METH_VARARGS, "The CUDA launches of a view, as the launcher plans them (tests)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, methods};
  return PyModule_Create(&module_def);
}
