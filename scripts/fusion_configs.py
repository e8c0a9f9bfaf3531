"""Probe (H100, issue 11): the SELU chain at 2^24, fused against torch's, compiled afresh three times per
autotuning setting, with the launch configuration Inductor's pointwise autotuning picked for each kernel.

Usage on the GPU machine: ``python3 scripts/fusion_configs.py``. Output: docs/benchmarks/h100_fusion_fp32_configs.txt.
It wraps a private Inductor method (``CachingAutotuner.autotune_to_one_config``) to read the choice.
"""

import functools
import statistics

import torch
from torch._inductor.runtime import triton_heuristics

import activations_ext
from activations_ext.bench_fusion import CHAINS, own_code
from activations_ext.timing import interleaved_median_seconds

SETTINGS = {
    "default": {},
    "no_pw_autotune": {"triton.autotune_pointwise": False},
    "max_autotune_pw": {"max_autotune_pointwise": True},
}
chosen: list[str] = []
_autotune = triton_heuristics.CachingAutotuner.autotune_to_one_config


def _recording_autotune(self, *args, **kwargs) -> object:  # noqa: ANN001
    result = _autotune(self, *args, **kwargs)
    config = self.launchers[0].config
    chosen.append(f"{self.fn.__name__[:28]}:{config.kwargs}w{config.num_warps}")
    return result


def main() -> None:
    """Prints one line per compile and the median ratio per setting."""
    triton_heuristics.CachingAutotuner.autotune_to_one_config = _recording_autotune
    torch._inductor.config.force_disable_caches = True
    device, n = torch.device("cuda"), 2**24
    ours, theirs, _ = CHAINS["selu"]
    for dtype in (torch.float32, torch.bfloat16):
        generator = torch.Generator(device).manual_seed(0)
        x, b, y, src = (torch.randn(n, dtype=dtype, device=device, generator=generator) for _ in range(4))
        dst = torch.empty_like(src)
        for name, patch in SETTINGS.items():
            ratios = []
            for rep in range(3):
                torch._dynamo.reset()
                chosen.clear()
                with torch._inductor.config.patch(patch):
                    fused = torch.compile(own_code(ours), fullgraph=True, dynamic=False)
                    torch_chain = torch.compile(own_code(theirs), fullgraph=True, dynamic=False)
                    activations_ext.set_inductor_fusion(True)
                    fused(x, b, y)
                    torch_chain(x, b, y)
                times = interleaved_median_seconds(
                    {
                        "fused": functools.partial(fused, x, b, y),
                        "torch": functools.partial(torch_chain, x, b, y),
                        "copy": functools.partial(dst.copy_, src),
                    },
                    device,
                    rounds=41,
                )
                ratios.append(times["torch"] / times["fused"])
                us = {k: f"{v * 1e6:6.1f}us" for k, v in times.items()}
                print(
                    f"selu {str(dtype)[6:]:9} {name:15} rep{rep} fused {us['fused']} torch {us['torch']} "
                    f"copy {us['copy']} ratio {ratios[-1]:.3f} configs {chosen}",
                    flush=True,
                )
            print(f"  -> {name} median ratio {statistics.median(ratios):.3f}", flush=True)


if __name__ == "__main__":
    main()
