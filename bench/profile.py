"""Profile the daemon under load with py-spy and print where its time goes.

    python -m bench.profile [--load heartbeat|rebalance] [--seconds 8] [--top 25]

``heartbeat``: the 1-connection heartbeat scenario at ``--depth`` (64); ``rebalance``: 5,000 members
joining a fresh group, twice. py-spy samples the daemon process (200 Hz); the raw stacks
are aggregated into the functions (file:line) with the most samples on top of the stack
("self") and anywhere on it ("inclusive"). py-spy comes with the ``bench`` extra.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import heartbeat, rebalance, servers


def aggregate(raw: Path, top: int) -> str:
    """py-spy's raw (collapsed) stacks -> the top self and inclusive frames, in percent."""
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        own[frames[-1]] += n
        for frame in set(frames):
            anywhere[frame] += n
    if not total:
        return "no samples"
    lines = [f"{total} samples", "", "self:"]
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines += ["", "inclusive (coordinator/ and protocol/ frames):"]
    ours = [(f, n) for f, n in anywhere.most_common() if "coordinator/" in f or "protocol/" in f]
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in ours[:top]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--load", choices=("heartbeat", "rebalance"), default="heartbeat")
    parser.add_argument("--depth", type=int, default=64, help="heartbeat pipeline depth")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    spy_bin = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    ctx = multiprocessing.get_context("spawn")
    with (
        tempfile.TemporaryDirectory() as tmp,
        ProcessPoolExecutor(2, mp_context=ctx) as pool,
        servers.start_daemon() as daemon,
    ):
        raw = Path(tmp) / "stacks.txt"
        command = [spy_bin, "record", "--pid", str(daemon.pid), "--rate", "200"]
        spy = subprocess.Popen(
            [*command, "--format", "raw", "--output", str(raw)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)  # py-spy attaches
        try:
            if args.load == "heartbeat":
                name = f"1 connection, depth {args.depth}"
                heartbeat.SCENARIOS = (heartbeat.Scenario(name, 1, args.depth, 1),)
                print(heartbeat.measure_server(daemon, pool, args.seconds, 0.5))
            else:
                for _ in range(2):
                    print(
                        pool.submit(
                            rebalance.run_one, daemon.port, daemon.pid, 5000, "join", 6000
                        ).result()
                    )
        finally:
            spy.send_signal(2)  # SIGINT: py-spy writes what it has
            spy.wait(30)
        report = aggregate(raw, args.top)
    print(report)
    return report


if __name__ == "__main__":
    main()
