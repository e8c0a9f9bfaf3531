"""``nn.Module`` drop-ins: one for each activation of the catalog (its ``torch.nn`` counterpart's, where torch has
one), ``GELU``, one for ``torch.nn.SELU`` followed by ``torch.nn.AlphaDropout``, and ``GatedMLP``, the gated MLP
block of current models."""

from collections.abc import Callable

import torch
from torch import nn

from activations_ext import functional
from activations_ext.catalog import ACTIVATIONS, GATED, Activation
from activations_ext.functional import selu_alpha_dropout


class _Activation(nn.Module):
    """An elementwise activation with torch.nn's ``inplace`` option and repr."""

    function: Callable[[torch.Tensor, bool], torch.Tensor]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns the activation of ``x`` (``x`` itself, overwritten, when ``inplace``)."""
        return type(self).function(x, self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, as torch.nn's activations print it."""
        return "inplace=True" if self.inplace else ""


def _module(activation: Activation) -> type[_Activation]:
    """The ``nn.Module`` drop-in of a catalog activation, named as torch.nn names its own."""
    like = f", like ``torch.nn.{activation.module_name}``" if hasattr(nn, activation.module_name) else ""
    doc = f"""{activation.summary}

    Applies :func:`activations_ext.{activation.name}` elementwise{like}.

    Args:
        inplace: overwrite the input with the result.
    """
    namespace = {"function": staticmethod(getattr(functional, activation.name)), "__doc__": doc}
    return type(activation.module_name, (_Activation,), {"__module__": __name__, **namespace})


# One module per activation of the catalog: activations_ext.SELU, activations_ext.ReLU, ...
for _activation in ACTIVATIONS.values():
    if _activation.drop_in:
        globals()[_activation.module_name] = _module(_activation)


class GELU(nn.Module):
    """GELU, or with ``approximate="tanh"`` its tanh approximation: a drop-in for ``torch.nn.GELU``.

    Applies :func:`activations_ext.gelu` elementwise.

    Args:
        approximate: ``"none"`` or ``"tanh"``.
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns the GELU of ``x``."""
        return functional.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        """``approximate='tanh'`` as torch.nn.GELU prints it."""
        return f"approximate={self.approximate!r}"


class SELUAlphaDropout(nn.Module):
    """SELU then AlphaDropout, fused: a drop-in for ``nn.Sequential(nn.SELU(), nn.AlphaDropout(p))``.

    In training mode :func:`activations_ext.selu_alpha_dropout` (one pass, no stored mask); in eval mode SELU.

    Args:
        p: the probability of dropping an element, in [0, 1]. The default is a self-normalizing network's usual
            0.05 (Klambauer et al. use 0.05 to 0.1), not ``nn.AlphaDropout``'s 0.5.
    """

    def __init__(self, p: float = 0.05) -> None:
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """SELU of ``x``, with alpha dropout in training mode."""
        return selu_alpha_dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        """``p=...``, as torch.nn's dropout modules print it."""
        return f"p={self.p}"


# The gated ops by the name of the activation they gate: "silu", "gelu", "gelu_tanh", "relu", "squared_relu",
# "quick_gelu".
_GATED_BY_ACTIVATION = {gated.activation.name: gated for gated in GATED.values()}


class GatedMLP(nn.Module):
    """A gated MLP block, ``down(act(gate) * up)`` (SwiGLU with ``activation="silu"``, GeGLU with ``"gelu"`` or
    ``"gelu_tanh"``, ReGLU with ``"relu"``), as in Llama, Mistral, Qwen and Gemma, squared ReGLU with
    ``"squared_relu"`` or quick GeGLU with ``"quick_gelu"``.

    Gate and up come from one fused projection, ``gate_up`` (``in_features -> 2 * hidden_features``, gate the first
    half of its output); the gated op reads both halves where they lie and writes ``[..., hidden_features]`` in one
    pass, and its backward writes the ``[..., 2 * hidden_features]`` gradient in one pass. Under ``torch.compile``
    the gated op fuses with its neighbours.

    Args:
        in_features: the size of each input's last dimension.
        hidden_features: the gated hidden size (the intermediate size of a Llama MLP).
        out_features: the size of each output's last dimension; ``in_features`` when None.
        activation: the gate's activation: ``"silu"``, ``"gelu"``, ``"gelu_tanh"``, ``"relu"``, ``"squared_relu"``
            or ``"quick_gelu"``.
        bias: whether both projections have a bias (current models have none).
        device: where to create the parameters.
        dtype: the parameters' dtype.
    """

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        out_features: int | None = None,
        activation: str = "silu",
        bias: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if activation not in _GATED_BY_ACTIVATION:
            choices = sorted(_GATED_BY_ACTIVATION)
            raise ValueError(f"GatedMLP: activation must be one of {choices}, but got {activation!r}")
        factory = {"device": device, "dtype": dtype}
        self.activation = activation
        self.gate_up = nn.Linear(in_features, 2 * hidden_features, bias=bias, **factory)
        self.down = nn.Linear(hidden_features, out_features or in_features, bias=bias, **factory)
        self._gated = _GATED_BY_ACTIVATION[activation].ops.merged

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns ``down(act(gate) * up)`` with ``gate, up = gate_up(x).chunk(2, dim=-1)``."""
        return self.down(self._gated(self.gate_up(x)))

    def extra_repr(self) -> str:
        """The activation by name; the projections print themselves."""
        return f"activation={self.activation!r}"
