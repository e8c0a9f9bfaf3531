"""Builds activations_ext._C against the torch of the build environment (pyproject.toml pins it for isolated
builds; `--no-build-isolation` uses the installed one): a CUDAExtension when a CUDA toolkit is found, else a
CppExtension."""

import glob
import os
import sys

import setuptools
from setuptools import setup

# pyproject.toml's SPDX license string needs setuptools 77; older ones fail with a message about
# `project.license`. Builds without isolation use whatever setuptools is installed, so say it here.
if int(setuptools.__version__.split(".")[0]) < 77:
    sys.exit(
        f"activations_ext: the build needs setuptools>=77, found {setuptools.__version__}:\n"
        "    pip install 'setuptools>=77'"
    )

try:
    import torch
    from torch.utils import cpp_extension
except ImportError:
    sys.exit(
        "activations_ext: the build needs the torch it will run with, and cannot see one. Install torch first,\n"
        "then build without isolation so the build uses it:\n"
        "    pip install torch && pip install --no-build-isolation .\n"
        "(A torch extension only loads in the torch release it was compiled against.)"
    )

# Ampere, Ada, Hopper, plus PTX for newer GPUs; used only when no GPU is visible to pick from.
DEFAULT_CUDA_ARCHS = "8.0;8.6;8.9;9.0+PTX"


def find_cuda_home() -> str | None:
    """The CUDA toolkit to build with: CUDA_HOME/CUDA_PATH, torch's own guess, then /usr/local/cuda.

    torch guesses from the nvcc on PATH, which can be a wrapper outside the toolkit (e.g. /usr/local/bin/nvcc
    giving /usr/local); a candidate counts only if it holds the runtime headers.
    """
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), cpp_extension.CUDA_HOME, "/usr/local/cuda"]
    for home in candidates:
        if home and os.path.exists(os.path.join(home, "include", "cuda_runtime.h")):
            return home
    return None


def extension() -> cpp_extension.CppExtension:
    sources = [
        "kernels/ops.cpp",
        "kernels/cpu_kernels.cpp",
        "kernels/cpu_math.cpp",
        "kernels/autograd.cpp",
        "kernels/functionalize.cpp",
        "kernels/batching.cpp",
        "kernels/module.cpp",
    ]
    # -fno-trapping-math lets the CPU loops compute both branches and select (it changes no result).
    # -ffp-contract=off: no fused multiply-adds, so the loop's AVX2 and baseline copies round alike, and
    # alike with the C++ Inductor generates for the ops under torch.compile (which it builds so too).
    # ACT_CXX_FLAGS / ACT_LDFLAGS: extra flags, e.g. for the sanitizer build in scripts/sanitize_cpu.sh.
    cxx_flags = [
        "-O3",
        # kernels/compat/nlohmann/json.hpp says why.
        "-idirafter",
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "compat"),
        "-fno-trapping-math",
        "-ffp-contract=off",
        "-DPy_LIMITED_API=0x030A0000",
        *os.environ.get("ACT_CXX_FLAGS", "").split(),
    ]
    # at::parallel_for runs serially in code compiled without OpenMP (ATen/ParallelOpenMP.h). Nothing
    # is linked: the OpenMP calls bind to the libgomp that torch itself loads, so a wheel carries no
    # second OpenMP runtime.
    if torch.backends.openmp.is_available():
        cxx_flags.append("-fopenmp")
    link_flags = os.environ.get("ACT_LDFLAGS", "").split()
    cuda_home = find_cuda_home()
    use_cuda = cuda_home is not None and torch.version.cuda is not None and os.environ.get("ACT_FORCE_CPU") != "1"
    if not use_cuda:
        print("activations_ext: building the CPU-only extension (no CUDA toolkit, or a CPU build of torch)")
        return cpp_extension.CppExtension(
            "activations_ext._C",
            sources,
            extra_compile_args={"cxx": cxx_flags},
            extra_link_args=link_flags,
            py_limited_api=True,
        )
    os.environ["CUDA_HOME"] = cuda_home
    cpp_extension.CUDA_HOME = cuda_home
    if not torch.cuda.is_available() and not os.environ.get("TORCH_CUDA_ARCH_LIST"):
        os.environ["TORCH_CUDA_ARCH_LIST"] = DEFAULT_CUDA_ARCHS
    print(
        f"activations_ext: building the CUDA extension with {cuda_home} for "
        f"TORCH_CUDA_ARCH_LIST={os.environ.get('TORCH_CUDA_ARCH_LIST', 'the visible GPUs')}"
    )
    return cpp_extension.CUDAExtension(
        "activations_ext._C",
        [*sources, "kernels/cuda_generator.cpp", *sorted(glob.glob("kernels/*.cu"))],
        define_macros=[("ACT_WITH_CUDA", None)],
        extra_link_args=link_flags,
        extra_compile_args={"cxx": cxx_flags, "nvcc": ["-O3", "-lineinfo"]},
        py_limited_api=True,
    )


def write_build_info(package_dir: str) -> None:
    """Records the torch this build compiles against, for the import-time check in activations_ext."""
    os.makedirs(package_dir, exist_ok=True)
    with open(os.path.join(package_dir, "_build_info.py"), "w") as f:
        f.write(
            f'"""Written by setup.py: the torch this build of the extension was compiled against."""\n\n'
            f'TORCH_VERSION = "{torch.__version__}"\n'
        )


def torch_requirement() -> str:
    """The extension loads only in the torch release it was compiled against."""
    return f"torch=={torch.__version__.split('+')[0]}"


class BuildExtension(cpp_extension.BuildExtension):
    """Writes _build_info.py beside the extension it describes: into the checkout for an editable (in-place)
    build, else into the build tree the wheel is made from. So neither an sdist nor a wheel made from a checkout
    changes that checkout's own build."""

    def run(self) -> None:
        root = os.path.dirname(os.path.abspath(__file__)) if self.inplace else self.build_lib
        write_build_info(os.path.join(root, "activations_ext"))
        super().run()


setup(
    # numpy: torch warns on every import without it.
    install_requires=[torch_requirement(), "numpy"],
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
