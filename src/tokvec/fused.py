"""A fused input-layer kernel in Triton: ``out = weight[ids] * scale + table[:T]`` in one pass.

Taught in chapter 10.1, "Making it fast on a GPU" (``chapters/10b_making_it_fast.ipynb``). The
source tutorials' eager expression runs three kernels (gather, multiply, add) and moves the
output-sized tensor through memory six times; this kernel reads each table row once, reads each
positional tile once per slice of the batch and reuses it for every sequence of that slice, and
writes each output element once (:mod:`tokvec.bench.roofline` counts the bytes).

* The arithmetic is done in float32 and rounded **once** to the output dtype, not three times
  as in eager bfloat16. A bfloat16 result is within one bfloat16 step of the float64 value, and
  equals that value rounded once except next to a rounding boundary, where the float32 error
  can tip it over (a few elements in a million; ``tests/test_fused.py``).
* Grid (:func:`launch_grid`): one program per (block of positions, block of features, slice of
  the batch). A program loads its positional tile, then loops over the sequences of its slice,
  gathering ``BLOCK_T`` rows of ``BLOCK_D`` contiguous features each (contiguous loads that the
  compiler can vectorize). The blocks shrink to the tensor (``T = 1``: one position per
  program, none masked), and the batch is split only when the tiles alone would leave the GPU
  with fewer than ``min_programs`` programs (a decoding step, ``T = 1``, has few tiles).
* The tile is (positions x contiguous features): along a row of the tile, neighbouring threads
  read neighbouring addresses, so a warp's loads of one table row coalesce into a few wide
  memory transactions (512 bytes for 256 bfloat16 features), and a thread that holds several
  contiguous elements loads them with one vector instruction of up to 16 bytes. A tile that ran
  down a column (one feature of many rows) would scatter them.
* :func:`fused_embedding` checks the ids first (:func:`tokvec.validate.check_ids`): a bad id is a
  Python error, never an out-of-bounds read on the GPU (which returns garbage, or faults with an
  "illegal memory access" that, like a device-side assert, leaves the CUDA context unusable).
* Output dtypes: float32, float16 and bfloat16. A float64 weight is refused: the kernel computes
  in float32, so a float64 output would silently carry float32's error.
* Forward only: there is no backward, so tensors that require gradients are refused while
  autograd records (use :class:`tokvec.layers.TransformerEmbedding` to train).
  :class:`~tokvec.layers.TransformerEmbedding` never calls this kernel by itself.

Triton compiles for CUDA GPUs. Without one, ``interpret=True`` runs the same kernel in Triton's
interpreter on CPU tensors: far too slow for real use, but it lets the tests check the kernel's
indexing, masking and rounding on any Linux machine. (Triton 3.7's interpreter converts float32
to bfloat16 by cutting the low bits off, where a GPU rounds to nearest: on the CPU a bfloat16
result can be one step off the GPU's.) Its speed has not been measured yet: that needs a GPU
(see ``benchmarks/README.md``).
"""

from typing import NamedTuple

import torch

from tokvec.validate import check_ids, positive_int

try:                                   # triton ships for Linux x86-64 only; elsewhere: no fused path
    import triton
    import triton.language as tl
except ImportError:                    # pragma: no cover - depends on the platform
    triton = tl = None

__all__ = ["MIN_PROGRAMS", "OUTPUT_DTYPES", "Launch", "available", "fused_embedding", "kernel", "launch_grid"]

#: The weight (and output) dtypes the kernel takes: its arithmetic is float32, rounded once to these.
OUTPUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

#: Programs a launch should have at least, when the batch is large enough to split: several per
#: streaming multiprocessor of a large GPU, so that each one has others to run while a load waits.
MIN_PROGRAMS = 1024


def available(device: torch.device | str | None = None) -> bool:
    """True when the fused kernel can run compiled on ``device``: Triton installed and a CUDA device."""
    if triton is None:
        return False
    device = torch.device(device) if device is not None else None
    return torch.cuda.is_available() and (device is None or device.type == "cuda")


class Launch(NamedTuple):
    """How :func:`fused_embedding` launches the kernel: the grid and the block sizes it uses."""

    grid: tuple[int, int, int]       # programs along (positions, features, batch slices)
    block_t: int                     # positions per program (a power of two)
    block_d: int                     # features per program (a power of two)
    seqs_per_program: int            # sequences of the batch each program loops over

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _pow2_at_least(n: int) -> int:
    return 1 << (n - 1).bit_length()


def launch_grid(batch: int, seq_len: int, d_model: int, *, block_t: int = 16, block_d: int = 256,
                min_programs: int = MIN_PROGRAMS) -> Launch:
    """The grid for a ``(batch, seq_len, d_model)`` output: every program has work to do.

    ``block_t`` and ``block_d`` (powers of two, as ``tl.arange`` needs) are upper bounds: a block
    shrinks to the smallest power of two that covers the tensor, so ``seq_len = 1`` gives one
    position per program, not one position and fifteen masked ones. The batch is split into
    slices only when the tiles are fewer than ``min_programs``; each slice has
    ``seqs_per_program`` sequences (the last one may have fewer) and none is empty.
    """
    batch, seq_len, d_model = (positive_int(v, n) for v, n in
                               ((batch, "batch"), (seq_len, "seq_len"), (d_model, "d_model")))
    for value, name in ((block_t, "block_t"), (block_d, "block_d")):
        if positive_int(value, name) & (value - 1):
            raise ValueError(f"{name} must be a power of two (tl.arange needs one), got {value}; "
                             f"try {_pow2_at_least(value)}")
    min_programs = positive_int(min_programs, "min_programs")
    block_t = min(block_t, _pow2_at_least(seq_len))
    block_d = min(block_d, _pow2_at_least(d_model))
    tiles = _cdiv(seq_len, block_t) * _cdiv(d_model, block_d)
    slices = min(batch, _cdiv(min_programs, tiles))
    per_program = _cdiv(batch, slices)
    grid = (_cdiv(seq_len, block_t), _cdiv(d_model, block_d), _cdiv(batch, per_program))
    return Launch(grid, block_t, block_d, per_program)


if triton is not None:
    @triton.jit
    def _embedding_kernel(ids_ptr, weight_ptr, table_ptr, out_ptr, B, T, D, scale, seqs_per_program,
                          BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
        pid_t = tl.program_id(0)                                       # which block of positions
        pid_d = tl.program_id(1)                                       # which block of features
        pid_b = tl.program_id(2)                                       # which slice of the batch
        t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)                    # (BLOCK_T,) positions
        d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)                    # (BLOCK_D,) features
        mask = (t[:, None] < T) & (d[None, :] < D)                     # (BLOCK_T, BLOCK_D)
        pe = tl.load(table_ptr + t[:, None] * D + d[None, :], mask=mask, other=0.0).to(tl.float32)
        first = pid_b * seqs_per_program
        for b in range(first, tl.minimum(first + seqs_per_program, B)):  # the tile, reused
            tok = tl.load(ids_ptr + b * T + t, mask=t < T, other=0).to(tl.int64)      # (BLOCK_T,)
            row = tl.load(weight_ptr + tok[:, None] * D + d[None, :], mask=mask, other=0.0)
            val = row.to(tl.float32) * scale + pe                      # float32, rounded once below
            out = out_ptr + (b * T + t[:, None]).to(tl.int64) * D + d[None, :]
            tl.store(out, val.to(out_ptr.dtype.element_ty), mask=mask)               # the one rounding


_interpreted = None


def kernel(interpret: bool):
    """The kernel to launch: compiled for a CUDA GPU, or the same Python function run by Triton's
    interpreter on CPU tensors (``interpret=True``). Launch it as ``kernel(...)[grid](...)``, with
    the arguments :func:`fused_embedding` passes."""
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


def _refuse_gradients(weight: torch.Tensor, table: torch.Tensor) -> None:
    if not torch.is_grad_enabled():
        return
    needing = [name for name, x in (("weight", weight), ("table", table)) if x.requires_grad]
    if needing:
        names = " and ".join(needing)
        raise ValueError(
            f"fused_embedding has no backward, but {names} require{'s' if len(needing) == 1 else ''} "
            f"grad: the gradient would be silently lost. For inference, call it under "
            f"torch.inference_mode() or torch.no_grad() (or pass {needing[0]}.detach()); to train, "
            f"use tokvec.layers.TransformerEmbedding")


def fused_embedding(ids: torch.Tensor, weight: torch.Tensor, table: torch.Tensor, scale: float, *,
                    block_t: int = 16, block_d: int = 256, min_programs: int = MIN_PROGRAMS,
                    interpret: bool | None = None, check: bool = True) -> torch.Tensor:
    """``weight[ids] * scale + table[:T]`` in one kernel; ids ``(T,)`` or ``(B, T)``.

    ``weight`` is ``(N_V, d)`` in float32, float16 or bfloat16 and gives the output dtype (float64
    is refused: the arithmetic is float32, and a float64 result would pretend otherwise);
    ``table`` is ``(>= T, d)``, best in float32 or float64 so that the only rounding is the final
    one. ``interpret`` defaults to
    True for CPU tensors (Triton's interpreter) and False on a GPU. Forward only: ``weight`` or
    ``table`` requiring gradients is an error while autograd is recording. ``check=False`` skips
    the id check (one reduction and one read-back); only for ids already checked, as the GPU
    benchmark does to time the kernel alone. ``block_t``, ``block_d`` and ``min_programs`` shape
    the grid (:func:`launch_grid`).
    """
    _refuse_gradients(weight, table)
    if weight.dim() != 2 or table.dim() != 2:
        raise ValueError(f"weight must be (N_V, d) and table (l_max, d), got shapes {tuple(weight.shape)} "
                         f"and {tuple(table.shape)}")
    if weight.dtype not in OUTPUT_DTYPES:
        hint = ("cast it with weight.float(), or use tokvec.layers.TransformerEmbedding for float64"
                if weight.dtype == torch.float64 else "use a floating-point table")
        raise TypeError(f"fused_embedding computes in float32 and writes {', '.join(map(str, OUTPUT_DTYPES))}; "
                        f"got a {weight.dtype} weight: {hint}")
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
    launch = kernel(interpret)
    out = torch.empty(B, T, D, dtype=weight.dtype, device=weight.device)   # (B, T, d)
    if out.numel():
        grid, block_t, block_d, per_program = launch_grid(B, T, D, block_t=block_t, block_d=block_d,
                                                        min_programs=min_programs)
        launch[grid](ids2, weight.contiguous(), table[:T].contiguous(), out, B, T, D, float(scale),
                     per_program, BLOCK_T=block_t, BLOCK_D=block_d)
    return out if batched else out[0]
