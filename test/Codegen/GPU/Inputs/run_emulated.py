#!/usr/bin/env python3
"""Runs a command (e.g. `mpirun -np 2 prog`) against the GPU emulator.

Puts build/lib/gpu-emulator (the CPU implementations of libcuda.so.1,
libnccl.so.2 and libcublas.so.13) first in LD_LIBRARY_PATH and gives the
job a free MASTER_PORT for libSpmdGpuRuntime's rendezvous, so that tests
running at once do not collide.

    run_emulated.py EMULATOR_DIR COMMAND...
"""

import os
import socket
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    emulator, command = sys.argv[1], sys.argv[2:]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = emulator + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    env["MASTER_ADDR"] = "127.0.0.1"
    env["MASTER_PORT"] = str(free_port())
    sys.stdout.flush()
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    main()
