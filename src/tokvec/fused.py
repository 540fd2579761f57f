"""A fused input-layer kernel in Triton: ``out = weight[ids] * scale + table[:T]`` in one pass.

For the planned chapter "Making it fast" (issue 7). The seeds' eager expression runs three
kernels (gather, multiply, add) and moves the output-sized tensor through memory six times;
this kernel reads each table row once, reads each positional tile once and reuses it across the
whole batch, and writes each output element once (:mod:`tokvec.roofline` counts the bytes).

* The arithmetic is done in float32 and rounded **once** to the output dtype, so a bfloat16
  result is the float64 reference rounded once, not three times as in eager bfloat16.
* Grid: one program per (block of positions, block of features). It loads its positional tile,
  then loops over the batch, gathering ``BLOCK_T`` rows of ``BLOCK_D`` contiguous features each
  (contiguous loads that the compiler can vectorize).
* The kernel does not check ids: callers check them first (:func:`tokvec.arrays.check_ids`),
  which is what :class:`tokvec.layers.TransformerEmbedding` does.

Triton compiles for CUDA GPUs. Without one, ``interpret=True`` runs the same kernel in Triton's
interpreter on CPU tensors: far too slow for real use, but it lets the tests check the kernel's
indexing, masking and rounding on any Linux machine. Its speed has not been measured yet: that
needs a GPU (see ``benchmarks/README.md``).
"""

import torch

try:                                   # triton ships for Linux x86-64 only; elsewhere: no fused path
    import triton
    import triton.language as tl
except ImportError:                    # pragma: no cover - depends on the platform
    triton = tl = None

__all__ = ["available", "fused_embedding"]


def available(device: torch.device | str | None = None) -> bool:
    """True when the fused kernel can run compiled on ``device``: Triton installed and a CUDA device."""
    if triton is None:
        return False
    device = torch.device(device) if device is not None else None
    return torch.cuda.is_available() and (device is None or device.type == "cuda")


# The kernel (plain Python until compiled by triton.jit or run by Triton's interpreter).
if triton is not None:
    def _embedding_kernel(ids_ptr, weight_ptr, table_ptr, out_ptr, B, T, D, scale,
                          BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
        pid_t = tl.program_id(0)
        pid_d = tl.program_id(1)
        t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)                    # (BLOCK_T,) positions
        d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)                    # (BLOCK_D,) features
        mask = (t[:, None] < T) & (d[None, :] < D)                     # (BLOCK_T, BLOCK_D)
        pe = tl.load(table_ptr + t[:, None] * D + d[None, :], mask=mask, other=0.0).to(tl.float32)
        for b in range(0, B):                                          # the tile is reused B times
            tok = tl.load(ids_ptr + b * T + t, mask=t < T, other=0).to(tl.int64)      # (BLOCK_T,)
            row = tl.load(weight_ptr + tok[:, None] * D + d[None, :], mask=mask, other=0.0)
            val = row.to(tl.float32) * scale + pe                      # float32, rounded once below
            out = out_ptr + (b * T + t[:, None]).to(tl.int64) * D + d[None, :]
            tl.store(out, val.to(out_ptr.dtype.element_ty), mask=mask)               # the one rounding


_compiled = {}


def _kernel(interpret: bool):
    if triton is None:
        raise RuntimeError("the fused kernel needs Triton (Linux x86-64: pip install triton); "
                           "use the eager path, TransformerEmbedding does so automatically")
    if interpret not in _compiled:
        if interpret:
            from triton.runtime.interpreter import InterpretedFunction
            _compiled[interpret] = InterpretedFunction(_embedding_kernel)
        else:
            _compiled[interpret] = triton.jit(_embedding_kernel)
    return _compiled[interpret]


def fused_embedding(ids: torch.Tensor, weight: torch.Tensor, table: torch.Tensor, scale: float, *,
                    block_t: int = 16, block_d: int = 256, interpret: bool | None = None) -> torch.Tensor:
    """``weight[ids] * scale + table[:T]`` in one kernel; ids ``(T,)`` or ``(B, T)``, valid already.

    ``weight`` is ``(N_V, d)`` and gives the output dtype; ``table`` is ``(>= T, d)``, best in
    float32 or float64 so that the only rounding is the final one. ``interpret`` defaults to
    True for CPU tensors (Triton's interpreter) and False on a GPU.
    """
    if ids.dim() not in (1, 2):
        raise ValueError(f"ids must have shape (T,) or (B, T), got {tuple(ids.shape)}")
    batched = ids.dim() == 2
    ids2 = (ids if batched else ids.unsqueeze(0)).contiguous()     # (B, T)
    B, T = ids2.shape
    D = weight.shape[1]
    if table.shape[0] < T or table.shape[1] != D:
        raise ValueError(f"table must be (>= {T}, {D}), got {tuple(table.shape)}")
    if not (weight.device == ids2.device == table.device):
        raise ValueError(f"ids, weight and table must be on one device, got {ids2.device}, "
                         f"{weight.device}, {table.device}")
    if interpret is None:
        interpret = weight.device.type != "cuda"
    if not interpret and weight.device.type != "cuda":
        raise ValueError(f"the compiled kernel runs on a CUDA GPU, got tensors on {weight.device}; "
                         f"pass interpret=True to run Triton's interpreter on the CPU")
    kernel = _kernel(interpret)
    out = torch.empty(B, T, D, dtype=weight.dtype, device=weight.device)   # (B, T, d)
    if out.numel():
        grid = (triton.cdiv(T, block_t), triton.cdiv(D, block_d))
        kernel[grid](ids2, weight.contiguous(), table[:T].contiguous(), out, B, T, D, float(scale),
                                 BLOCK_T=block_t, BLOCK_D=block_d)
    return out if batched else out[0]
