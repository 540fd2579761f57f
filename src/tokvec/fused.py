"""A fused input-layer kernel in Triton: ``out = weight[ids] * scale + table[:T]`` in one pass.

For a chapter "Making it fast", planned and not yet in the book. The source tutorials' eager
expression runs three kernels (gather, multiply, add) and moves the output-sized tensor through
memory six times; this kernel reads each table row once, reads each positional tile once and
reuses it across the whole batch, and writes each output element once
(:mod:`tokvec.bench.roofline` counts the bytes).

* The arithmetic is done in float32 and rounded **once** to the output dtype, not three times
  as in eager bfloat16. A bfloat16 result is within one bfloat16 step of the float64 value, and
  equals that value rounded once except next to a rounding boundary, where the float32 error
  can tip it over (a few elements in a million; ``tests/test_fused.py``).
* Grid: one program per (block of positions, block of features). It loads its positional tile,
  then loops over the batch, gathering ``BLOCK_T`` rows of ``BLOCK_D`` contiguous features each
  (contiguous loads that the compiler can vectorize).
* :func:`fused_embedding` checks the ids first (:func:`tokvec.validate.check_ids`): a bad id is a
  Python error, never an out-of-bounds read on the GPU.
* Forward only: there is no backward, so tensors that require gradients are refused (use
  :class:`tokvec.layers.TransformerEmbedding` to train). :class:`~tokvec.layers.TransformerEmbedding`
  never calls this kernel by itself.

Triton compiles for CUDA GPUs. Without one, ``interpret=True`` runs the same kernel in Triton's
interpreter on CPU tensors: far too slow for real use, but it lets the tests check the kernel's
indexing, masking and rounding on any Linux machine. Its speed has not been measured yet: that
needs a GPU (see ``benchmarks/README.md``).
"""

import torch

from tokvec.validate import check_ids

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


if triton is not None:
    @triton.jit
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


_interpreted = None


def _kernel(interpret: bool):
    """The compiled kernel, or the same Python function run by Triton's interpreter (CPU)."""
    global _interpreted
    if triton is None:
        raise RuntimeError("the fused kernel needs Triton, which comes with PyTorch's CUDA build on "
                           "Linux (pip install triton); without it, use TransformerEmbedding")
    if not interpret:
        return _embedding_kernel
    if _interpreted is None:
        from triton.runtime.interpreter import InterpretedFunction
        _interpreted = InterpretedFunction(_embedding_kernel.fn)
    return _interpreted


def fused_embedding(ids: torch.Tensor, weight: torch.Tensor, table: torch.Tensor, scale: float, *,
                    block_t: int = 16, block_d: int = 256, interpret: bool | None = None,
                    check: bool = True) -> torch.Tensor:
    """``weight[ids] * scale + table[:T]`` in one kernel; ids ``(T,)`` or ``(B, T)``.

    ``weight`` is ``(N_V, d)`` and gives the output dtype; ``table`` is ``(>= T, d)``, best in
    float32 or float64 so that the only rounding is the final one. ``interpret`` defaults to
    True for CPU tensors (Triton's interpreter) and False on a GPU. Forward only: ``weight`` or
    ``table`` requiring gradients is an error while autograd is recording. ``check=False`` skips
    the id check (one reduction and one read-back); only for ids already checked, as the GPU
    benchmark does to time the kernel alone.
    """
    if torch.is_grad_enabled() and (weight.requires_grad or table.requires_grad):
        raise ValueError("fused_embedding has no backward: gradients would be silently lost. Call it "
                         "under torch.no_grad() / torch.inference_mode(), or train with "
                         "tokvec.layers.TransformerEmbedding")
    if weight.dim() != 2 or table.dim() != 2:
        raise ValueError(f"weight must be (N_V, d) and table (l_max, d), got shapes {tuple(weight.shape)} "
                         f"and {tuple(table.shape)}")
    if check:
        check_ids(ids, weight.shape[0], table.shape[0])
    elif ids.dim() not in (1, 2):
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
