"""The ops on DTensor: two gloo ranks on this machine, each check against the plain-tensor result."""

import os
import socket
import sys
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from activations_ext.catalog import ACTIVATIONS, GATED

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")

WORLD = 2
TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checks(rank: int) -> None:
    """Runs on every rank; raises on any mismatch."""
    from torch.distributed.tensor import DeviceMesh, DTensor, Partial, Replicate, Shard, distribute_tensor

    import activations_ext  # noqa: F401  (registers the ops and their sharding rules)

    mesh = DeviceMesh("cpu", list(range(WORLD)))
    x = torch.randn(8, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    g = torch.randn(8, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for placement in (Shard(0), Shard(1), Replicate(), Partial()):
        if isinstance(placement, Partial):  # each rank holds half: the logical tensor is x
            dx = DTensor.from_local(x / WORLD, mesh, [placement])
        else:
            dx = distribute_tensor(x, mesh, [placement])
        for op in ACTIVATIONS:
            plain = ACTIVATIONS[op].torch_forward
            leaf = dx.detach().requires_grad_()
            y = getattr(torch.ops.act, op)(leaf)
            assert not any(isinstance(p, Partial) for p in y.placements), f"{op}: {y.placements}"
            torch.testing.assert_close(y.full_tensor(), plain(x))
            (grad,) = torch.autograd.grad(y.sum() * 1.5, leaf)
            xr = x.clone().requires_grad_()
            (expected,) = torch.autograd.grad(plain(xr).sum() * 1.5, xr)
            torch.testing.assert_close(grad.full_tensor(), expected)
            for out_placement in (Replicate(), Shard(0), Shard(1)):  # out keeps its own placement
                out = distribute_tensor(torch.full_like(x, 7.0), mesh, [out_placement])
                assert getattr(torch.ops.act, op)(dx, out=out) is out
                assert out.placements == (out_placement,)
                torch.testing.assert_close(out.full_tensor(), plain(x))
            with pytest.raises(RuntimeError, match=f"act.{op}.out: out is Partial"):
                getattr(torch.ops.act, op)(dx, out=DTensor.from_local(torch.zeros_like(x), mesh, [Partial()]))
            if isinstance(placement, Partial):
                with pytest.raises(RuntimeError, match="in-place operations that require placement changes"):
                    getattr(torch.ops.act, op + "_")(dx.detach().clone())
                continue
            target = dx.detach().clone()
            getattr(torch.ops.act, op + "_")(target)
            assert target.placements == dx.placements
            torch.testing.assert_close(target.full_tensor(), plain(x))
            # Backward ops on differing placements: redistributed to one.
            dg = distribute_tensor(
                g, mesh, [Shard(1) if isinstance(placement, Shard) and placement.dim == 0 else Shard(0)]
            )
            result = getattr(torch.ops.act, op)(dx)
            grad_input = getattr(torch.ops.act, op + "_backward")(dg, result)
            torch.testing.assert_close(grad_input.full_tensor(), getattr(torch.ops.act, op + "_backward")(g, plain(x)))
            with pytest.raises(
                RuntimeError, match=rf"act\.{op}_backward\.default:? got mixed torch\.Tensor and DTensor"
            ):
                getattr(torch.ops.act, op + "_backward")(g, result)
        compiled_checks(dx, x)
        dropout_checks(dx, x)
    cross_mesh_checks(mesh, x)
    gated_checks(mesh)
    empty_shard_checks(mesh)


def gated_checks(mesh) -> None:
    """The gated ops on every placement of x = [8, 2 * 6] and of (gate, up): the plain result and gradients. The
    two-tensor forms and the merged ones sharded along another dimension keep the placement; an x sharded along its
    last dimension is redistributed (gate and up are its halves) and gives the plain result; a merged out= sharded
    along its last dimension is refused."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    x = torch.randn(8, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    grad = torch.randn(8, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    gate, up = x[:, :6].contiguous(), x[:, 6:].contiguous()
    for gated in GATED.values():
        ops = gated.ops
        expected = ops.merged(x)
        expected_grads = ops.pair_backward(grad, gate, up)
        for placement in (Shard(0), Shard(1), Replicate()):
            dx = distribute_tensor(x, mesh, [placement])
            leaf = dx.detach().requires_grad_()
            y = ops.merged(leaf)
            torch.testing.assert_close(y.full_tensor(), expected)
            if placement != Shard(1):
                assert y.placements == (placement,), (gated.name, y.placements)
            (grad_x,) = torch.autograd.grad(y, leaf, distribute_tensor(grad, mesh, [y.placements[0]]))
            torch.testing.assert_close(grad_x.full_tensor(), torch.cat(expected_grads, -1))
            dgate, dup = (distribute_tensor(t, mesh, [placement]) for t in (gate, up))
            z = ops.pair(dgate, dup)
            assert z.placements == (placement,)
            torch.testing.assert_close(z.full_tensor(), expected)
            grads = ops.pair_backward(distribute_tensor(grad, mesh, [placement]), dgate, dup)
            for ours, theirs in zip(grads, expected_grads, strict=True):
                assert ours.placements == (placement,)
                torch.testing.assert_close(ours.full_tensor(), theirs)
            out = distribute_tensor(torch.full_like(gate, 7.0), mesh, [placement])
            assert ops.pair_out(dgate, dup, out=out) is out and out.placements == (placement,)
            torch.testing.assert_close(out.full_tensor(), expected)
            if placement == Shard(1):
                with pytest.raises(RuntimeError, match=rf"{gated.name}.out: out is sharded along its last dimension"):
                    ops.merged_out(dx, out=out)
            else:
                assert ops.merged_out(dx, out=out) is out and out.placements == (placement,)
                torch.testing.assert_close(out.full_tensor(), expected)


def empty_shard_checks(mesh) -> None:
    """A dimension of fewer elements than ranks (as the one-token step of sequence-parallel decoding shards): its
    input keeps its placement, the last rank's shard empty, as under torch's own pointwise ops, in every form."""
    from torch.distributed.tensor import Shard, distribute_tensor

    x = torch.randn(1, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    leaf = distribute_tensor(x, mesh, [Shard(0)]).requires_grad_()
    y = torch.relu(leaf)  # torch's own rules
    (grad,) = torch.autograd.grad(y, leaf, y.detach() + 1)
    assert y.placements == grad.placements == (Shard(0),)
    for op in ACTIVATIONS:
        dx = distribute_tensor(x, mesh, [Shard(0)])
        leaf = dx.detach().requires_grad_()
        y = getattr(torch.ops.act, op)(leaf)
        assert y.placements == (Shard(0),), (op, y.placements)
        torch.testing.assert_close(y.full_tensor(), ACTIVATIONS[op].torch_forward(x))
        (grad,) = torch.autograd.grad(y, leaf, y.detach() + 1)  # a gradient laid out as y
        assert grad.placements == (Shard(0),), (op, grad.placements)
        target = dx.detach().clone()
        getattr(torch.ops.act, op + "_")(target)
        assert target.placements == (Shard(0),)
        torch.testing.assert_close(target.full_tensor(), ACTIVATIONS[op].torch_forward(x))
        out = distribute_tensor(torch.full_like(x, 7.0), mesh, [Shard(0)])
        assert getattr(torch.ops.act, op)(dx, out=out) is out and out.placements == (Shard(0),)
        torch.testing.assert_close(out.full_tensor(), ACTIVATIONS[op].torch_forward(x))
    gate, up = x[:, :2].contiguous(), x[:, 2:].contiguous()
    for gated in GATED.values():
        ops = gated.ops
        merged = ops.merged(distribute_tensor(x, mesh, [Shard(0)]))
        pair = ops.pair(*(distribute_tensor(t, mesh, [Shard(0)]) for t in (gate, up)))
        for y in (merged, pair):
            assert y.placements == (Shard(0),), (gated.name, y.placements)
            torch.testing.assert_close(y.full_tensor(), ops.merged(x))
        out = distribute_tensor(torch.full_like(gate, 7.0), mesh, [Shard(0)])
        assert ops.merged_out(distribute_tensor(x, mesh, [Shard(0)]), out=out) is out
        torch.testing.assert_close(out.full_tensor(), ops.merged(x))


def dropout_checks(dx, x: torch.Tensor) -> None:
    """selu_alpha_dropout: SELU in eval mode on any placement; in train mode a clear refusal."""
    torch.testing.assert_close(torch.ops.act.selu_alpha_dropout(dx, 0.1, False).full_tensor(), torch.selu(x))
    with pytest.raises(RuntimeError, match="act.selu_alpha_dropout: train mode does not take a DTensor"):
        torch.ops.act.selu_alpha_dropout(dx, 0.1, True)


def compiled_checks(dx, x: torch.Tensor) -> None:
    """Both ops, forward and backward, in one fullgraph compiled function on a DTensor input."""
    import torch._dynamo

    def block(t):
        return torch.ops.act.relu(torch.ops.act.selu(t) * 1.5 - 0.5)

    torch._dynamo.reset()
    leaf = dx.detach().requires_grad_()
    y = torch.compile(block, fullgraph=True)(leaf)
    (grad,) = torch.autograd.grad(y.sum(), leaf)
    xr = x.clone().requires_grad_()
    expected = torch.relu(torch.selu(xr) * 1.5 - 0.5)
    (expected_grad,) = torch.autograd.grad(expected.sum(), xr)
    torch.testing.assert_close(y.full_tensor(), expected.detach())
    torch.testing.assert_close(grad.full_tensor(), expected_grad)


def cross_mesh_checks(mesh, x: torch.Tensor) -> None:
    """DTensors on two meshes in one call: a clear error, for positional and out= operands alike."""
    from torch.distributed.tensor import DeviceMesh, Shard, distribute_tensor

    other = DeviceMesh("cpu", list(reversed(range(WORLD))))  # same ranks, other order: shards land elsewhere
    a, b = distribute_tensor(x, mesh, [Shard(0)]), distribute_tensor(x, other, [Shard(0)])
    for op in ACTIVATIONS:
        with pytest.raises(RuntimeError, match="cross-mesh"):
            getattr(torch.ops.act, op + "_backward")(a, b)
        # Filled, not empty: uninitialized memory can hold NaN, which torch.equal never matches.
        out = distribute_tensor(torch.full_like(x, 7.0), other, [Shard(0)])
        before = out.to_local().clone()
        with pytest.raises(RuntimeError, match=rf"act.{op}.out: out is on the DeviceMesh of ranks \[1, 0\]"):
            getattr(torch.ops.act, op)(a, out=out)
        assert torch.equal(out.to_local(), before), "a refused out= must not be written"


def worker(rank: int, port: int) -> None:
    """One rank: the checks, then a leave without finalizing the interpreter once they passed.

    Once DTensor has used a gloo group, torch keeps its worker threads running past ``destroy_process_group()``,
    and one that drops a finished collective while the interpreter finalizes aborts the rank ("terminate called
    without an active exception") after checks that passed, as examples/tensor_parallel.py's ``leave`` says.
    """
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        checks(rank)
        dist.barrier()  # no rank tears its group down while another still uses it
    finally:
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@pytest.mark.cpu_only
def test_ops_on_dtensor_two_gloo_ranks():
    context = mp.start_processes(worker, args=(free_port(),), nprocs=WORLD, join=False, start_method="spawn")
    deadline = time.monotonic() + TIMEOUT_S
    while not context.join(timeout=5):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"the ranks did not finish within {TIMEOUT_S} s")


@pytest.mark.parametrize(
    ("script", "variant"),
    [("tensor_parallel.py", []), ("tensor_parallel.py", ["--sequence-parallel"]), ("fsdp2.py", [])],
    ids=["tensor-parallel", "sequence-parallel", "fsdp2"],
)
def test_examples_match_single_device(script, variant):
    import re
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / script
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(WORLD),
        "--master-port",
        str(free_port()),
        str(example),
        "--steps",
        "3",
        *variant,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, f"stdout:\n{result.stdout[-2000:]}\nstderr:\n{result.stderr[-3000:]}"
    differences = [float(d) for d in re.findall(r"difference (\S+)", result.stdout)]
    assert len(differences) == 3 and max(differences) < 1e-5, result.stdout
