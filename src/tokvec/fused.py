"""A fused input-layer kernel in Triton: ``out = weight[ids] * scale + table[pos]`` in one pass.

Taught in the chapter "Making it fast on a GPU" (``chapters/making_it_fast.ipynb``). The
source tutorials' eager expression runs three kernels (gather, multiply, add) and moves the
output-sized tensor through memory six times; this kernel reads each table row once, reads each
positional tile once per slice of the batch and reuses it for every sequence of that slice, and
writes each output element once (:mod:`tokvec.bench.roofline` counts the bytes).

* Positions: token ``t`` of every sequence sits at position ``t`` (``table[:T]``, a training
  batch), or, with ``offsets``, token ``t`` of sequence ``b`` sits at ``offsets[b] + t``: the
  batches a server decodes, where every sequence has its own length. With offsets each sequence
  reads its own positional rows, so the tile is no longer shared across the batch.
* The arithmetic is done in float32 and rounded **once** to the output dtype. A bfloat16 result
  is within one bfloat16 step of the float64 value, and equals that value rounded once except
  next to a rounding boundary, where the float32 error can tip it over (a few elements in a
  million; ``tests/test_fused.py``).
* Grid (:func:`launch_grid`): one program per (block of positions, block of features, slice of
  the batch). A program loads its positional tile, then loops over the sequences of its slice,
  gathering ``BLOCK_T`` rows of ``BLOCK_D`` contiguous features each (contiguous loads that the
  compiler can vectorize). The blocks shrink to the tensor (``T = 1``: one position per
  program, none masked), and the batch is split only when the tiles alone would leave the GPU
  with fewer than ``min_programs`` programs (a decoding step, ``T = 1``, has few tiles).
* ``d_model`` is a compile-time constant of the kernel (``D: tl.constexpr``, one compilation per
  width, as a model has one): the compiler then knows every row starts on a 16-byte boundary
  when ``d`` allows it, and uses 16-byte vector loads for any such ``d``, not only for multiples
  of 16 (the only divisibility Triton infers for an integer argument).
* The tile is (positions x contiguous features): along a row of the tile, neighbouring threads
  read neighbouring addresses, so a warp's loads of one table row coalesce into a few wide
  memory transactions (256 bytes for the 128 bfloat16 features of a default tile), and a thread that holds several
  contiguous elements loads them with one vector instruction of up to 16 bytes.
* Bad ids: :func:`fused_embedding` checks the ids (and offsets) first
  (:func:`tokvec.validate.check_ids`): a bad id is a Python error that names it. The kernel also
  guards itself: an id outside ``0..N_V-1`` or a position outside the table is never read
  (no out-of-bounds access, no "illegal memory access" that would end the CUDA context); its row
  of the output is NaN. That guard is what ``check=False`` relies on, for ids checked before.
* Output dtypes: float32, float16 and bfloat16. A float64 weight is refused: the kernel computes
  in float32, so a float64 output would silently carry float32's error.
* Forward only: there is no backward, so tensors that require gradients are refused while
  autograd records (use :class:`tokvec.layers.TransformerEmbedding` to train).
* The host side is cheap when called again with the same shape: the grid of each shape is
  computed once (:func:`launch_grid` caches it), and ``check=False`` skips the id check's
  read-back. A decoding loop that needs still less captures the call in a CUDA graph
  (the chapter "Making it fast on a GPU" measures both).

Triton compiles for CUDA GPUs. Without one, ``interpret=True`` runs the same kernel in Triton's
interpreter on CPU tensors: far too slow for real use, but it lets the tests check the kernel's
indexing, masking and rounding on any Linux machine. (Triton 3.7's interpreter converts float32
to bfloat16 by cutting the low bits off, where a GPU rounds to nearest, and it rounds
``row * scale + pe`` twice where the compiled kernel uses one fused multiply-add: on the CPU a
result can be one step off the GPU's.)
"""

import numbers
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


_GRIDS: dict[tuple[int, ...], Launch] = {}          # launch_grid's answers, by their arguments


def launch_grid(batch: int, seq_len: int, d_model: int, *, block_t: int = 4, block_d: int = 128,
                min_programs: int = MIN_PROGRAMS) -> Launch:
    """The grid for a ``(batch, seq_len, d_model)`` output: every program has work to do.

    ``block_t`` and ``block_d`` (powers of two, as ``tl.arange`` needs) are upper bounds: a block
    shrinks to the smallest power of two that covers the tensor, so ``seq_len = 1`` gives one
    position per program, not one position and fifteen masked ones. The batch is split into
    slices only when the tiles are fewer than ``min_programs``; each slice has
    ``seqs_per_program`` sequences (the last one may have fewer) and none is empty.

    The answer for each set of arguments is computed (and its arguments checked) once, then
    looked up: a decoding loop asks for the same grid at every step.
    """
    key = (batch, seq_len, d_model, block_t, block_d, min_programs)
    if all(type(v) is int for v in key) and key in _GRIDS:
        return _GRIDS[key]
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
    _GRIDS[key] = Launch(grid, block_t, block_d, per_program)
    return _GRIDS[key]


if triton is not None:
    @triton.jit
    def _embedding_kernel(ids_ptr, weight_ptr, table_ptr, out_ptr, offsets_ptr, B, T, V, L, scale,
                          seqs_per_program, D: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr,
                          PER_SEQUENCE: tl.constexpr):
        pid_t = tl.program_id(0)                                       # which block of positions
        pid_d = tl.program_id(1)                                       # which block of features
        pid_b = tl.program_id(2)                                       # which slice of the batch
        t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)                    # (BLOCK_T,) positions
        d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)                    # (BLOCK_D,) features
        mask = (t[:, None] < T) & (d[None, :] < D)                     # (BLOCK_T, BLOCK_D)
        if not PER_SEQUENCE:                                           # one tile for the whole slice
            pe = tl.load(table_ptr + t[:, None] * D + d[None, :], mask=mask, other=0.0).to(tl.float32)
        first = pid_b * seqs_per_program
        for b in range(first, tl.minimum(first + seqs_per_program, B)):  # the tile, reused
            tok = tl.load(ids_ptr + b * T + t, mask=t < T, other=0).to(tl.int64)      # (BLOCK_T,)
            ok = mask & ((tok >= 0) & (tok < V))[:, None]              # never read outside the table
            row = tl.load(weight_ptr + tok[:, None] * D + d[None, :], mask=ok, other=float("nan"))
            if PER_SEQUENCE:                                           # this sequence's own rows
                pos = tl.load(offsets_ptr + b).to(tl.int64) + t        # (BLOCK_T,)
                inside = mask & ((pos >= 0) & (pos < L))[:, None]
                pe = tl.load(table_ptr + pos[:, None] * D + d[None, :], mask=inside,
                             other=float("nan")).to(tl.float32)
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


def _check_tables(weight: torch.Tensor, table: torch.Tensor) -> None:
    if weight.dim() != 2 or table.dim() != 2:
        raise ValueError(f"weight must be (N_V, d) and table (l_max, d), got shapes {tuple(weight.shape)} "
                         f"and {tuple(table.shape)}")
    if weight.dtype not in OUTPUT_DTYPES:
        hint = ("cast it with weight.float(), or use tokvec.layers.TransformerEmbedding for float64"
                if weight.dtype == torch.float64 else "use a floating-point table")
        raise TypeError(f"fused_embedding computes in float32 and writes {', '.join(map(str, OUTPUT_DTYPES))}; "
                        f"got a {weight.dtype} weight: {hint}")


def fused_embedding(ids: torch.Tensor, weight: torch.Tensor, table: torch.Tensor, scale: float, *,
                    offsets: torch.Tensor | int | None = None, block_t: int = 4, block_d: int = 128,
                    min_programs: int = MIN_PROGRAMS, interpret: bool | None = None,
                    check: bool = True) -> torch.Tensor:
    """``weight[ids] * scale + table[positions]`` in one kernel; ids ``(T,)`` or ``(B, T)``.

    ``weight`` is ``(N_V, d)`` in float32, float16 or bfloat16 and gives the output dtype (float64
    is refused: the arithmetic is float32, and a float64 result would pretend otherwise);
    ``table`` is ``(l_max, d)``, best in float32 or float64 so that the only rounding is the final
    one. Positions: ``offsets=None`` puts token ``t`` at position ``t`` (``table[:T]``); an int
    ``p`` puts every sequence at ``p + t``; a ``(B,)`` integer tensor puts token ``t`` of sequence
    ``b`` at ``offsets[b] + t``, as a server's batch of sequences of different lengths needs.
    ``interpret`` defaults to True for CPU tensors (Triton's interpreter) and False on a GPU.
    Forward only: ``weight`` or ``table`` requiring gradients is an error while autograd is
    recording.

    ``check=True`` checks the ids and offsets on the device and reads the result back (a small
    reduction of each, one read-back for both, so Python waits for the GPU once); a bad one is an
    error that names it. ``check=False`` skips that wait, for ids already checked: the kernel still never
    reads outside the tables, and writes NaN for a bad id or position. ``block_t``, ``block_d``
    and ``min_programs`` shape the grid (:func:`launch_grid`).
    """
    _refuse_gradients(weight, table)
    _check_tables(weight, table)
    if check:
        check_ids(ids, weight.shape[0], table.shape[0], offsets)      # one read-back for both
    elif ids.dim() not in (1, 2):
        raise ValueError(f"ids must have shape (T,) or (B, T), got {tuple(ids.shape)}")
    elif ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TypeError(f"ids must have an integer dtype, got {ids.dtype}; convert with ids.long()")
    batched = ids.dim() == 2
    ids2 = ids if batched else ids.unsqueeze(0)                     # (B, T)
    B, T = ids2.shape
    D = weight.shape[1]
    if table.shape[1] != D:
        raise ValueError(f"table must be (l_max, {D}) to match the weight, got {tuple(table.shape)}")
    if isinstance(offsets, numbers.Integral) and not isinstance(offsets, bool):
        start = int(offsets)                                         # a Python int: checked for free
        if not 0 <= start <= table.shape[0] - T:
            raise IndexError(f"offset {start} is out of range: a sequence of {T} tokens must start in "
                             f"0..{table.shape[0] - T} (the table has {table.shape[0]} rows)")
        table, offsets = table[start:], None                         # every sequence at offsets + t
    if offsets is None and table.shape[0] < T:
        raise ValueError(f"table must be (>= {T}, {D}), got {tuple(table.shape)}")
    if B * T >= 2**31 or (offsets is None and T * D >= 2**31):
        raise ValueError(f"the kernel indexes the ids (B * T = {B * T:,}) and the positional tile (T * d = "
                         f"{T * D:,}) with 32-bit offsets, which must stay below 2**31; split the batch or "
                         f"the sequence into smaller calls")
    per_sequence = offsets is not None
    if per_sequence and not check:                                  # the checks that cost nothing
        if not batched or not isinstance(offsets, torch.Tensor) or offsets.shape != (B,):
            want = f"a ({B},) integer tensor, one start per sequence" if batched else "an int (ids of rank 1)"
            raise ValueError(f"offsets must be {want}, got {offsets!r:.60}")
        if offsets.dtype.is_floating_point or offsets.dtype.is_complex or offsets.dtype == torch.bool:
            raise TypeError(f"offsets must have an integer dtype, got {offsets.dtype}; convert with offsets.long()")
    if not ids2.is_contiguous():
        ids2 = ids2.contiguous()
    if not (weight.device == ids2.device == table.device) or (per_sequence and offsets.device != weight.device):
        where = f", {offsets.device}" if per_sequence else ""
        raise ValueError(f"ids, weight, table (and offsets) must be on one device, got {ids2.device}, "
                         f"{weight.device}, {table.device}{where}")
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
        weight = weight if weight.is_contiguous() else weight.contiguous()
        if not table.is_contiguous():                              # the kernel reads row t at t * d
            table = table.contiguous() if per_sequence else table[:T].contiguous()
        starts = offsets.contiguous() if per_sequence else ids2        # (B,); unread without offsets
        args = (ids2, weight, table, out, starts, B, T, weight.shape[0], table.shape[0], float(scale),
                per_program)
        blocks = {"D": D, "BLOCK_T": block_t, "BLOCK_D": block_d, "PER_SEQUENCE": per_sequence}
        if interpret or weight.device.index == torch.cuda.current_device():
            launch[grid](*args, **blocks)
        else:
            with torch.cuda.device(weight.device):               # Triton launches on the current device
                launch[grid](*args, **blocks)
    return out if batched else out[0]
