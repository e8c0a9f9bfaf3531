"""Import-time checks: the compiled extension is there, and built against the installed torch release."""


def release(version: str) -> str:
    """'2.14.1+cu130' -> '2.14.1'."""
    return version.split("+")[0]


def check_torch_version(installed: str, built_against: str) -> None:
    """Raises ImportError, saying what to do, when the extension cannot load into the ``installed`` torch.

    A C++ extension binds to symbols of the exact libtorch it was compiled with; loading it into another
    release fails with an undefined-symbol error, or worse, misbehaves.
    """
    if release(installed) != release(built_against):
        raise ImportError(
            f"activations_ext was compiled against torch {built_against}, but torch {installed} is installed. "
            "Rebuild it against this torch from its source directory: "
            "pip install --no-build-isolation --no-deps --force-reinstall ."
        )


def missing_build(package_dir: str) -> ImportError:
    """The error for a package directory without its compiled extension, saying how to build it."""
    return ImportError(
        f"activations_ext: the compiled extension is not in {package_dir}. Build it from the source checkout with "
        "`pip install --no-build-isolation -e .` (or install with `pip install .`). If it is installed elsewhere, "
        "Python found this source directory first (the current directory comes first on sys.path): run from "
        "another directory."
    )
