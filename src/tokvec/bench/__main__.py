"""``python -m tokvec.bench [kernels | gpu-validate | host | parts] ...``: the CPU benchmark; with
``kernels`` the GPU one; with ``gpu-validate`` every check of the GPU chapter on one GPU
(:mod:`tokvec.bench.gpu_validate`); with ``host`` the fused wrapper's Python per call
(:mod:`tokvec.bench.host`); with ``parts`` the page faults per call and the input checks alone
(:mod:`tokvec.bench.parts`)."""

import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["kernels"]:
        from tokvec.bench import gpu
        return gpu.main(argv[1:])
    if argv[:1] == ["gpu-validate"]:
        from tokvec.bench import gpu_validate
        return gpu_validate.main(argv[1:])
    if argv[:1] == ["host"]:
        from tokvec.bench import host
        return host.main(argv[1:])
    if argv[:1] == ["parts"]:
        from tokvec.bench import parts
        return parts.main(argv[1:])
    from tokvec.bench import cpu
    return cpu.main(argv)


if __name__ == "__main__":
    main()
