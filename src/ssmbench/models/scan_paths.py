"""Which scan a model's recurrent layers ran: the run record's ``scan`` and the lines of
benchmarks/gpu_check.py.

Every layer with a linear recurrence over time sets its attribute ``scan_path`` in each
forward pass to the name of the path that pass took (the choice depends on the device, on
whether mamba_ssm is importable and on the layer's settings, so it is known only once the
layer has run); ``scan_of(model)`` collects the names over the model's modules. A model
without such a layer (MS4N's convolution kernel, attention, a GRU, Log-NCDE's and
LinODEnet's ODE steps, an estimator) has none: ``scan_of`` returns None.

Names are "<kind> (<implementation>)", the kind one of

* ``fused``: a CUDA / Triton kernel of mamba_ssm (``mamba_scan.fused_selective_scan``,
  ``fused_chunk_scan``), on CUDA tensors when mamba_ssm is importable; on the CPU the numba
  kernels of Mamba1's selective scan (``mamba_cpu_scan``:
  ``mamba_scan.selective_scan(method="fused")``) and of the TIDES family's zero-order hold
  and recurrence (``tides_cpu_scan.zoh_scan``), the CPU's choice when numba imports;
* ``parallel``: a parallel scan in plain PyTorch (log2 T levels of vectorised ops per chunk
  of T steps: ``mamba_scan.selective_scan(method="parallel")``, ``mamba_scan.ssd_scan``);
* ``chunked``: TIDES' chunked scan in plain PyTorch (``tides_scan.linear_scan``: about
  2 sqrt(2L) whole-tensor steps, every chunk advanced at once): off the CPU, with the
  bilinear discretisation, and where the fused kernel cannot take the inputs;
* ``stepwise``: one in-place op per time step over the whole state, with a closed-form
  backward (``mamba_scan.selective_scan(method="stepwise")``, the reference the fused CPU
  kernel gives way to for inputs it does not take);
* ``sequential``: the step-by-step reference recurrence, one autograd op per step
  (``tides_scan.recurrent_scan``: a TIDES layer's recurrent and step modes; the Fading
  Flash models' loop).
"""

from __future__ import annotations

import torch.nn as nn

FUSED_SELECTIVE = "fused (mamba_ssm selective_scan_fn)"
FUSED_CHUNK = "fused (mamba_ssm mamba_chunk_scan_combined)"
FUSED_CPU_SELECTIVE = "fused (numba mamba_cpu_scan)"
PARALLEL_SELECTIVE = "parallel (pure PyTorch selective_scan)"
STEPWISE_SELECTIVE = "stepwise (pure PyTorch selective_scan)"
PARALLEL_SSD = "parallel (pure PyTorch ssd_scan)"
FUSED_TIDES_CPU = "fused (numba tides_cpu_scan.zoh_scan)"
CHUNKED_LINEAR = "chunked (pure PyTorch tides_scan.linear_scan)"
SEQUENTIAL_RECURRENT = "sequential (pure PyTorch tides_scan.recurrent_scan)"
SEQUENTIAL_LOOP = "sequential (pure PyTorch loop over steps)"

#: every name a layer may set (the tests hold the layers to these)
SCAN_PATHS = (
    FUSED_SELECTIVE,
    FUSED_CHUNK,
    FUSED_CPU_SELECTIVE,
    PARALLEL_SELECTIVE,
    STEPWISE_SELECTIVE,
    PARALLEL_SSD,
    FUSED_TIDES_CPU,
    CHUNKED_LINEAR,
    SEQUENTIAL_RECURRENT,
    SEQUENTIAL_LOOP,
)

__all__ = ["SCAN_PATHS", "scan_of"]


def scan_of(model: object) -> str | None:
    """The scan paths ``model``'s layers took in their last forward pass, distinct and
    sorted, joined by "; "; None when no layer of it has a scan or none has run.
    ``model``: a torch module, or anything else (an estimator: None)."""
    if not isinstance(model, nn.Module):
        return None
    paths = {getattr(module, "scan_path", None) for module in model.modules()}
    paths.discard(None)
    return "; ".join(sorted(paths)) if paths else None
