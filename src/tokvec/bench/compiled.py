"""What the compiler makes of the fused kernel for an H100, without a GPU.

Triton compiles a kernel ahead of time for any NVIDIA target on any Linux machine: it writes PTX,
the assembly it hands to NVIDIA's compiler, and `ptxas` (shipped inside Triton) turns that into
machine code and reports each thread's registers and any *spill*, registers that did not fit and
went to slow local memory. The GPU chapter uses it to show why two launch settings of the sweep ran
twice as long as the others, and the tests use it to check that the kernel compiles for sm_90
with 16-byte accesses and a fused multiply-add.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

__all__ = ["compile_kernel"]

_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def compile_kernel(d_model: int, *, block_t: int = 4, block_d: int = 128, num_warps: int = 4,
                   dtype: str = "bfloat16", table_dtype: str = "float32", per_sequence: bool = False,
                   arch: int = 90) -> dict:
    """Compile :func:`tokvec.fused._embedding_kernel` for ``sm_<arch>`` and report on it.

    Returns the PTX's counts of 16-byte loads and stores (``ld.global.v4``, ``st.global.v4``) and of
    fused multiply-adds (``fma.rn.f32``), and what ``ptxas -v`` reports: ``registers`` per thread
    and ``spill_stores`` (bytes a thread writes to local memory because its registers ran out).
    The pointers are declared 16-byte aligned, as PyTorch's allocations are.
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tokvec import fused

    w, t = _DTYPES[dtype], _DTYPES[table_dtype]
    signature = {"ids_ptr": "*i64", "weight_ptr": f"*{w}", "table_ptr": f"*{t}", "out_ptr": f"*{w}",
                 "offsets_ptr": "*i64", "B": "i32", "T": "i32", "V": "i32", "L": "i32", "scale": "fp32",
                 "seqs_per_program": "i32", "D": "constexpr", "BLOCK_T": "constexpr", "BLOCK_D": "constexpr",
                 "PER_SEQUENCE": "constexpr"}
    constants = {"D": d_model, "BLOCK_T": block_t, "BLOCK_D": block_d, "PER_SEQUENCE": per_sequence}
    aligned = {(i,): [["tt.divisibility", 16]] for i in range(5)}
    source = ASTSource(fused._embedding_kernel, signature, constexprs=constants, attrs=aligned)
    kernel = triton.compile(source, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})
    ptx = kernel.asm["ptx"]
    report = {"v4_loads": ptx.count("ld.global.v4"), "v4_stores": ptx.count("st.global.v4"),
              "fma": ptx.count("fma.rn.f32")}
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        out = subprocess.run([str(ptxas), f"-arch=sm_{arch}a", "-v", str(src), "-o", str(Path(tmp) / "k.cubin")],
                             capture_output=True, text=True, check=True)
    registers = re.search(r"Used (\d+) registers", out.stderr)
    spills = re.search(r"(\d+) bytes spill stores", out.stderr)
    report.update(registers=int(registers.group(1)), spill_stores=int(spills.group(1)))
    return report
