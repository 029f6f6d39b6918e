#!/usr/bin/env python3
"""Ctrl-C (SIGINT) or SIGTERM of the launcher ends the whole job.

    launcher_check.py mpirun|torchrun SIGINT|SIGTERM

Launches rank_failure_check.py `forever` on 2 ranks under the launcher,
waits until the ranks are stepping, sends the signal to the launcher alone
(as a terminal's Ctrl-C reaches a foreground job's leader, or a scheduler's
SIGTERM), and prints how the launcher ended, how long it took, and whether
any process of the job is left (an orphan rank would keep its cores).
"""

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))


def job_processes(token):
    """PIDs of processes whose command line holds `token`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def main(launcher, name):
    token = f"--job={uuid.uuid4().hex}"
    script = [sys.executable, os.path.join(HERE, "rank_failure_check.py"),
              "forever", token]
    if launcher == "mpirun":
        cmd = [shutil.which("mpirun"), "--oversubscribe", "--bind-to", "none",
               "-np", "2"] + script
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node", "2"] + script[1:]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        if line.strip() == "stepping":
            break
        if time.monotonic() > deadline:
            break
    else:
        print(f"the job ended before stepping (rc {proc.wait()})")
        return 1
    start = time.monotonic()
    proc.send_signal(getattr(signal, name))
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        print(f"{launcher} still running 60 s after {name}")
        return 1
    took = time.monotonic() - start
    time.sleep(1)  # a rank the launcher lost would still be here
    left = job_processes(token)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    print(f"{launcher} ended {took:.0f} s after {name}, "
          f"{'non-zero' if proc.returncode != 0 else 'zero'} status; "
          f"{len(left)} process(es) of the job left")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
