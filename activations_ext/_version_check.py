"""The import-time check that the installed torch is the release the extension was compiled against."""


def release(version: str) -> str:
    """'2.14.1+cu130' -> '2.14.1'."""
    return version.split("+")[0]


def check_torch_version(installed: str, built_against: str) -> None:
    """Raises ImportError, saying what to do, when ``installed`` is another torch release than ``built_against``.

    A C++ extension binds to symbols of the exact libtorch it was compiled with; loading it into another
    release fails with an undefined-symbol error, or worse, misbehaves.
    """
    if release(installed) != release(built_against):
        raise ImportError(
            f"activations_ext was compiled against torch {built_against}, but torch {installed} is installed. "
            "Rebuild it against this torch from its source directory: "
            "pip install --no-build-isolation --no-deps --force-reinstall ."
        )
