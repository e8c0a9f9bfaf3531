"""The ops inside torch.compile: no graph breaks, dynamic shapes, CUDA graphs, forward and backward."""

import pytest
import torch
from conftest import random_data, requires_cuda
from torch import nn

import activations_ext
from activations_ext.catalog import ACTIVATIONS, GATED


def model_fn(x: torch.Tensor) -> torch.Tensor:
    y = activations_ext.selu(x * 2)
    y = activations_ext.relu(y - 0.5, inplace=True)
    return activations_ext.selu(y) + activations_ext.relu(x)


def check_compiled(fn, device, **compile_kwargs):
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, **compile_kwargs)
    for n in (16, 33, 64):
        x = random_data((n, 7), torch.float32, device, seed=n).requires_grad_()
        expected = fn(x)
        (g_expected,) = torch.autograd.grad(expected.sum(), x)
        actual = compiled(x)
        (g_actual,) = torch.autograd.grad(actual.sum(), x)
        torch.testing.assert_close(actual, expected)
        torch.testing.assert_close(g_actual, g_expected)


def test_compile_fullgraph(device):
    check_compiled(model_fn, device)


def test_compile_dynamic(device):
    check_compiled(model_fn, device, dynamic=True)


@requires_cuda
def test_compile_reduce_overhead():
    check_compiled(model_fn, "cuda", mode="reduce-overhead")


def test_compiled_module_has_no_graph_breaks(device):
    model = nn.Sequential(nn.Linear(8, 8), activations_ext.SELU(), nn.Linear(8, 8), activations_ext.ReLU(inplace=True))
    model = model.to(device).double()
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model)(random_data((4, 8), torch.float64, device))
    assert explanation.graph_break_count == 0
    compiled = torch.compile(model, fullgraph=True)
    x = random_data((4, 8), torch.float64, device)
    torch.testing.assert_close(compiled(x), model(x))


def test_compiled_graph_calls_our_kernels(device):
    from torch._dynamo.testing import CompileCounterWithBackend

    backend = CompileCounterWithBackend("aot_eager")
    torch._dynamo.reset()
    torch.compile(model_fn, backend=backend, fullgraph=True)(random_data((4, 4), torch.float32, device))
    graph_code = "\n".join(g.code for g in backend.graphs)
    assert "torch.ops.act.selu" in graph_code and "torch.ops.act.relu" in graph_code


def test_compile_out_variant(device):
    def fn(x):
        out = torch.empty_like(x)
        torch.ops.act.selu(x, out=out)
        return torch.ops.act.relu(out, out=torch.empty_like(x)) * 2

    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, dynamic=True)
    for n in (5, 12):
        x = random_data((n, 3), torch.float32, device)
        torch.testing.assert_close(compiled(x), fn(x))


@pytest.mark.parametrize("op", [f"{name}_" for name in ACTIVATIONS])
def test_functionalize_inplace(device, op):
    def fn(x):
        y = x.clone()
        getattr(torch.ops.act, op)(y[1:])
        return y

    x = random_data((9,), torch.float32, device)
    functional = torch.func.functionalize(fn)
    torch.testing.assert_close(functional(x), fn(x))
    graph = torch.fx.experimental.proxy_tensor.make_fx(torch.func.functionalize(fn, remove="mutations_and_views"))(x)
    assert op not in graph.code  # the in-place op became its functional form
    torch.testing.assert_close(graph(x), fn(x))


def gated_block(gated):
    """A gated MLP's middle as model code writes it around the op: the merged form on a projection's output, the
    two-tensor form on two, an out= form; forward and backward."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, x * 0.5 - 1], dim=-1)
        out = torch.empty_like(x)
        gated.ops.pair_out(x.detach(), x.detach() + 1, out=out)  # out= forms take no part in autograd
        return gated.ops.merged(h) * 2 + gated.ops.pair(x - 0.25, out)

    return fn


@pytest.mark.parametrize("name", GATED)
@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_gated(device, name, dynamic):
    check_compiled(gated_block(GATED[name]), device, dynamic=dynamic)


@requires_cuda
@pytest.mark.parametrize("name", GATED)
def test_compile_gated_reduce_overhead(name):
    check_compiled(gated_block(GATED[name]), "cuda", mode="reduce-overhead")


@pytest.mark.parametrize("activation", sorted({g.activation.name for g in GATED.values()}))
def test_compiled_gated_mlp_has_no_graph_breaks(device, activation):
    model = activations_ext.GatedMLP(8, 16, activation=activation, device=device, dtype=torch.float64)
    x = random_data((4, 8), torch.float64, device)
    torch._dynamo.reset()
    assert torch._dynamo.explain(model)(x).graph_break_count == 0
    torch.testing.assert_close(torch.compile(model, fullgraph=True)(x), model(x))
