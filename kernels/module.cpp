// The importable module `activations_ext._C`. It defines no Python functions: loading it runs
// the static registrations of the `act` ops, which users reach through torch.ops.act.
#include <Python.h>

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
