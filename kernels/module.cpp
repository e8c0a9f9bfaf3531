// The importable module `activations_ext._C`. Loading it runs the static registrations of the `act`
// ops, which users reach through torch.ops.act; its one function reports a build detail for tests.
#include <Python.h>

#include "strided_view.h"

namespace {

PyObject* cpu_loop(PyObject*, PyObject*) { return PyUnicode_FromString(act::cpu_loop_name()); }

PyMethodDef methods[] = {
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
