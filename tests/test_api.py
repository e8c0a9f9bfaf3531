"""Python API, modules, bad input and the build itself."""

import os
from collections.abc import Callable

import pytest
import torch
from conftest import DTYPES, random_data, requires_cuda
from torch import nn

import activations_ext
from activations_ext.catalog import ACTIVATIONS, GATED, Activation

DROP_INS = [a for a in ACTIVATIONS.values() if a.drop_in]


@pytest.mark.parametrize("dtype", DTYPES)
def test_modules_are_drop_ins(device, dtype):
    x = random_data((6, 9), dtype, device)
    for a in DROP_INS:
        ours, theirs = getattr(activations_ext, a.module_name), getattr(nn, a.module_name, None)
        if theirs is None:  # no torch.nn counterpart: torch.nn's conventions, torch's composition's values
            assert repr(ours()) == f"{a.module_name}()" and repr(ours(inplace=True)) == f"{a.module_name}(inplace=True)"
            expected = a.torch_forward(x)
        else:
            assert repr(ours()) == repr(theirs()) and repr(ours(inplace=True)) == repr(theirs(inplace=True))
            expected = theirs()(x)
        torch.testing.assert_close(ours()(x), expected)
        y = x.clone()
        assert ours(inplace=True)(y) is y
        torch.testing.assert_close(y, expected)


def test_public_api():
    drop_ins = {name for a in DROP_INS for name in (a.name, a.module_name)}
    assert drop_ins >= {"selu", "relu", "squared_relu", "SELU", "ReLU", "SquaredReLU"}
    gated = {name for g in GATED.values() if g.activation.drop_in for name in (g.name, g.pair_name)}
    assert gated >= {"silu_and_mul", "silu_mul", "relu_and_mul", "relu_mul"}
    assert set(activations_ext.__all__) == drop_ins | gated | {
        "GELU",
        "GatedMLP",
        "gelu",
        "gelu_and_mul",
        "gelu_mul",
        "SELUAlphaDropout",
        "init",
        "selu_alpha_dropout",
        "set_inductor_fusion",
        "inductor_fusion_enabled",
    }
    for name in activations_ext.__all__:
        assert getattr(activations_ext, name).__doc__, name


@pytest.mark.skipif(os.environ.get("ACT_EXPECT_CUDA_BUILD") != "1", reason="only where the CUDA build is expected")
def test_cuda_kernels_were_built():
    assert torch._C._dispatch_has_kernel_for_dispatch_key("act::selu", "CUDA")


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool, torch.complex64, torch.float8_e4m3fn])
@pytest.mark.parametrize("op", [*ACTIVATIONS, *(f"{name}_" for name in ACTIVATIONS)])
def test_bad_dtype_names_it(device, op, dtype):
    x = torch.ones(3, device=device).to(dtype)
    with pytest.raises(TypeError, match=f"act.{op.rstrip('_')}: expected x of dtype .* but got"):
        getattr(torch.ops.act, op)(x)


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_bad_out(device, op):
    fn = getattr(torch.ops.act, op)
    x = random_data((4, 5), torch.float32, device)
    with pytest.raises(RuntimeError, match=r"expected out of the shape of x \[4, 5\], but got \[5, 4\]"):
        fn(x, out=torch.empty(5, 4, device=device))
    with pytest.raises(TypeError, match="expected out of the dtype of x"):
        fn(x, out=torch.empty(4, 5, device=device, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="unsupported operation|internal overlap"):
        fn(x, out=torch.empty(1, 5, device=device).expand(4, 5))
    with pytest.raises(RuntimeError, match="unsupported operation|partial overlap|overlap"):
        square = random_data((5, 5), torch.float32, device)
        fn(square, out=square.t())


@requires_cuda
@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_bad_devices(op):
    x = random_data((4,), torch.float32, "cuda")
    with pytest.raises(RuntimeError, match="expected out on the device of x"):
        getattr(torch.ops.act, op)(x, out=torch.empty(4))
    with pytest.raises(RuntimeError, match="expected grad_output on the device of self_or_result"):
        getattr(torch.ops.act, op + "_backward")(torch.ones(4), x)


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_bad_backward_args(device, op):
    backward = getattr(torch.ops.act, op + "_backward")
    r = random_data((4,), torch.float32, device)
    with pytest.raises(RuntimeError, match="expected grad_output of the shape of self_or_result"):
        backward(torch.ones(5, device=device), r)
    with pytest.raises(TypeError, match="expected grad_output of the dtype of self_or_result"):
        backward(torch.ones(4, device=device, dtype=torch.float64), r)
    with pytest.raises(TypeError, match="expected self_or_result of dtype"):
        backward(torch.ones(4, device=device, dtype=torch.int32), r.int())


@pytest.mark.parametrize("op", [f"{name}_" for name in ACTIVATIONS])
def test_inplace_on_overlapping_memory_raises_and_leaves_it(device, op):
    base = random_data((1, 5), torch.float32, device)
    before = base.clone()
    with pytest.raises(RuntimeError, match="unsupported operation|internal overlap"):
        getattr(torch.ops.act, op)(base.expand(3, 5))
    assert torch.equal(base, before)


def test_fake_kernels_reject_bad_input_like_the_real_ones():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, 4)
        with pytest.raises(TypeError, match="act.selu: expected x of dtype"):
            torch.ops.act.selu(x.int())
        with pytest.raises(RuntimeError, match="expected out of the shape of x"):
            torch.ops.act.relu(x, out=torch.empty(4, 3))
        assert torch.ops.act.selu(x.t()).stride() == (1, 4)


BAD_CALLS = {
    "dtype": lambda x: torch.ops.act.selu(x.long()),
    "out dtype": lambda x: torch.ops.act.relu(x, out=torch.empty_like(x, dtype=torch.float64)),
    "out shape": lambda x: torch.ops.act.selu(x, out=torch.empty(4, 3)),
    "backward dtype": lambda x: torch.ops.act.selu_backward(x, x.half()),
}


@pytest.mark.parametrize("case", BAD_CALLS)
def test_eager_and_compile_reject_bad_input_with_the_same_words(case):
    from torch._subclasses.fake_tensor import FakeTensorMode

    def error(fn: callable, x: torch.Tensor) -> tuple[type, str]:
        with pytest.raises(Exception) as info:
            fn(x)
        return info.type, str(info.value).splitlines()[0]

    eager = error(BAD_CALLS[case], torch.ones(3, 4))
    with FakeTensorMode():
        traced = error(BAD_CALLS[case], torch.ones(3, 4))
    assert eager == traced
    assert "but got torch." in eager[1] or "[4, 3]" in eager[1]  # dtypes as Python prints them


def _torch_functional(a: Activation) -> Callable[..., torch.Tensor]:
    """torch.nn.functional's form of an activation, or one of torch's composition with its signature."""

    def composition(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:  # noqa: A002
        return a.torch_inplace(input) if inplace else a.torch_forward(input)

    return getattr(torch.nn.functional, a.name, composition)


@pytest.mark.parametrize("name", [a.name for a in DROP_INS])
def test_functional_api_takes_torch_nn_functional_arguments(name):
    ours, theirs = getattr(activations_ext, name), _torch_functional(ACTIVATIONS[name])
    x = random_data((5, 7), torch.float32, "cpu")
    torch.testing.assert_close(ours(input=x), theirs(input=x))
    torch.testing.assert_close(ours(x, False), theirs(x, False))
    y = x.clone()
    assert ours(input=y, inplace=True) is y
    torch.testing.assert_close(y, theirs(x))
    for bad in (None, [1.0, -1.0]):
        with pytest.raises(TypeError) as info:
            ours(bad)
        with pytest.raises(TypeError, match=r"argument 'input'.* must be Tensor, not") as reference:
            theirs(bad)
        assert f"{name}(): argument 'input'" in str(info.value)
        assert str(info.value).endswith(str(reference.value).split(" must be ")[-1])


@pytest.mark.parametrize("build_info", [False, True], ids=["never built", "installed without -e"])
def test_a_package_without_its_compiled_module_says_how_to_build_it(tmp_path, build_info):
    # What importing from a source checkout gives that was never built, or that `pip install .` built elsewhere
    # (setup.py leaves _build_info.py in the checkout, but the compiled module went to site-packages).
    import shutil
    import subprocess
    import sys

    package = tmp_path / "activations_ext"
    package.mkdir()
    source = os.path.dirname(activations_ext.__file__)
    for name in os.listdir(source):
        if name.endswith(".py") and (build_info or name != "_build_info.py"):
            shutil.copy(os.path.join(source, name), package)
    # An editable install's finder would find the built checkout first: leave it out.
    code = (
        "import sys; sys.meta_path = [f for f in sys.meta_path if not "
        "getattr(f, '__module__', '').startswith('__editable__')]; import activations_ext"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: activations_ext: the compiled extension is not in"), last
    assert "pip install --no-build-isolation -e ." in last and "run from another directory" in last


def test_readme_cpu_example_runs(capsys):
    readme = open(os.path.join(os.path.dirname(__file__), os.pardir, "README.md")).read()
    example = readme.split("On the CPU (no GPU needed)")[1].split("```python")[1].split("```")[0]
    exec(compile(example, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "torch.Size([4, 512])"


def test_torch_version_mismatch_is_a_clear_import_error():
    from activations_ext._build_info import TORCH_VERSION
    from activations_ext._version_check import check_torch_version

    assert TORCH_VERSION.split("+")[0] == torch.__version__.split("+")[0]
    check_torch_version("2.14.1+cu130", "2.14.1+cpu")  # same release, other build variant: fine
    with pytest.raises(
        ImportError, match=r"compiled against torch 2\.14\.1\+cu130, but torch 2\.11\.0\+cu130 is installed\. Rebuild"
    ):
        check_torch_version("2.11.0+cu130", "2.14.1+cu130")


def test_the_op_list_is_read_from_the_build():
    built = activations_ext._C.activations()
    assert tuple(name for name, _ in built) == tuple(ACTIVATIONS)
    assert dict(built)["selu"] == ("selu", "selu_", "selu.out", "selu_backward")
    assert ACTIVATIONS["relu"].ops.out is torch.ops.act.relu.out
    with pytest.raises(ImportError, match=r"registers the activations \('selu',\), but activations_ext/catalog\.py"):
        activations_ext._check_catalog_describes(("selu",))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_drop_ins_take_torchs_approximate(device, approximate):
    """activations_ext.gelu and GELU, and the ops' approximate= overloads, select act.gelu or act.gelu_tanh as torch's
    gelu selects its formula."""
    x = random_data((6, 9), torch.float32, device)
    activation = ACTIVATIONS["gelu_tanh" if approximate == "tanh" else "gelu"]
    op = activation.ops.forward
    expected = torch.nn.functional.gelu(x, approximate=approximate)
    assert repr(activations_ext.GELU(approximate)) == repr(nn.GELU(approximate))
    for ours in (
        activations_ext.gelu(input=x, approximate=approximate),
        activations_ext.GELU(approximate)(x),
        torch.ops.act.gelu(x, approximate=approximate),
    ):
        assert torch.equal(ours, op(x))
        torch.testing.assert_close(ours, expected)
    y = x.clone()
    assert torch.ops.act.gelu_(y, approximate=approximate) is y and torch.equal(y, op(x))
    out = torch.full_like(x, float("nan"))
    assert torch.ops.act.gelu(x, approximate=approximate, out=out) is out and torch.equal(out, op(x))
    g = random_data(x.shape, torch.float32, device, seed=3)
    assert torch.equal(torch.ops.act.gelu_backward(g, x, approximate=approximate), activation.ops.backward(g, x))


def test_gelu_refuses_an_unknown_approximation_by_name():
    x = torch.ones(3)
    calls = (
        lambda: activations_ext.gelu(x, approximate="erf"),
        lambda: activations_ext.GELU("erf")(x),
        lambda: torch.ops.act.gelu_(x.clone(), approximate="erf"),
        lambda: torch.ops.act.gelu(x, approximate="erf", out=torch.empty(3)),
        lambda: torch.ops.act.gelu_backward(x, x, approximate="erf"),
    )
    for call in calls:
        with pytest.raises(ValueError, match='expected approximate "none" or "tanh", but got "erf"'):
            call()
