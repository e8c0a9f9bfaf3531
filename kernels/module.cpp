// The importable module `activations_ext._C`. Loading it runs the static registrations of the `act`
// ops, which users reach through torch.ops.act; its functions report what the build holds.
#include <Python.h>

#include "activations.h"
#include "strided_view.h"

namespace {

PyObject* cpu_loop(PyObject*, PyObject*) { return PyUnicode_FromString(act::cpu_loop_name()); }

// ACT_ACTIVATIONS' names, in order: the Python side's catalog must describe exactly these.
PyObject* activations(PyObject*, PyObject*) {
  const char* names[] = {
#define ACT_NAME(Op) act::Op::name,
      ACT_ACTIVATIONS(ACT_NAME)
#undef ACT_NAME
  };
  constexpr Py_ssize_t n = sizeof(names) / sizeof(names[0]);
  PyObject* tuple = PyTuple_New(n);
  if (tuple == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* name = PyUnicode_FromString(names[i]);
    if (name == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SetItem(tuple, i, name);  // steals the reference
  }
  return tuple;
}

PyMethodDef methods[] = {
    {"activations", activations, METH_NOARGS, "The names of the elementwise activations this build registers."},
    {"cpu_loop", cpu_loop, METH_NOARGS,
     "Which compiled copy of the CPU loop runs here: 'x86-64-v4', 'x86-64-v3' (ATEN_CPU_CAPABILITY=avx2) or "
     "'baseline' (ATEN_CPU_CAPABILITY=default)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, methods};
  return PyModule_Create(&module_def);
}
