"""``python -m tokvec.bench [kernels] ...``: the CPU benchmark, or with ``kernels`` the GPU one."""

import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["kernels"]:
        from tokvec.bench import gpu
        return gpu.main(argv[1:])
    from tokvec.bench import cpu
    return cpu.main(argv)


if __name__ == "__main__":
    main()
