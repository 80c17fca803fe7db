#!/usr/bin/env python3
"""One workload, smelt and a PyTorch system alternated call by call in one run.

    BENCH_PYTHON=/path/to/venv/bin/python
    $BENCH_PYTHON scripts/interleaved_row.py sum_sq_diff [--rounds 300] [--system torch_compile]
                  [--thp] [--smelt target/release/smelt]

Scratch tooling, never run by CI. `paired_row.sh` compares whole processes a minute apart;
on a host whose memory bandwidth drifts between such phases, one lucky process decides a
pair. Here smelt runs as `smelt bench WORKLOAD --serve` (checked against its reference
backend first, then one `--warm`-style realisation per request) beside the anchors'
`bench.py` build of the PyTorch system in this process (checked against bench.py's float64
reference), and each round gives each system a turn of a few calls back to back, in
alternating order: both are timed in their back-to-back regime over the same fraction of a
second. The first call of a turn wakes its threads (and may meet the other system's still
spinning) and is not counted; a turn's figure is the median of the rest. Each call is timed as its own harness times it: smelt's realisation inside smelt,
PyTorch's call by `time.perf_counter` around it, as `smelt bench --warm` and `bench.py` do.
Prints both medians, the median of the per-round ratios and how many rounds smelt won.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANCHORS = os.path.join(ROOT, "..", "shared", "tools", "anchors")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--system", default="torch_compile")
    ap.add_argument("--thp", action="store_true", help="THP_MEM_ALLOC_ENABLE=1, as bench.py --thp")
    ap.add_argument("--gap-ms", type=float, default=10.0,
                    help="idle time between turns, longer than libgomp's default spin after a "
                         "parallel region (GOMP_SPINCOUNT 300000), so that no system's waiting "
                         "threads spin through the other's turn")
    ap.add_argument("--smelt", default=os.path.join(ROOT, "target", "release", "smelt"))
    ap.add_argument("--burst", type=int, default=6,
                    help="calls of one system per turn, back to back; the first of each turn "
                         "(waking its threads, with the other's maybe still spinning) is not "
                         "counted, the rest give the turn's median")
    args = ap.parse_args()
    if args.thp:
        os.environ["THP_MEM_ALLOC_ENABLE"] = "1"
    sys.path.insert(0, ANCHORS)
    import bench  # the anchors' harness: sets 2 threads before numpy and torch load
    import numpy as np

    wl = args.workload
    inp = bench.make_inputs(wl)
    built = bench.build(args.system, wl, inp, bench.variants_of(args.system, wl)[0])
    if built is None:
        sys.exit("%s has no %s" % (args.system, wl))
    fn, fin, to_np = built
    got = np.asarray(to_np(fin(fn())), dtype=np.float64)  # the first call compiles
    ref = bench.reference(wl, inp)
    err = float(np.max(np.abs(got - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
    if not err < 2e-3:
        sys.exit("%s %s: relative error %g against the float64 reference" % (args.system, wl, err))

    smelt = subprocess.Popen([args.smelt, "bench", wl, "--serve"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, bufsize=1)
    if smelt.stdout.readline().strip() != "ready":
        sys.exit("smelt bench %s --serve did not start" % wl)

    k = max(2, args.burst)

    def smelt_turn():
        smelt.stdin.write("\n" * k)  # served back to back
        smelt.stdin.flush()
        return statistics.median([float(smelt.stdout.readline()) for _ in range(k)][1:])

    def torch_turn():
        ms = []
        for _ in range(k):
            t0 = time.perf_counter()
            out = fin(fn())
            ms.append((time.perf_counter() - t0) * 1e3)
            del out  # freed outside the timed region, as bench.py does
        return statistics.median(ms[1:])

    smelt_turn(), torch_turn()  # warm both up
    gap = args.gap_ms / 1e3

    def smelt_then_sleep():
        ms = smelt_turn()
        time.sleep(gap)
        return ms

    def torch_then_sleep():
        ms = torch_turn()
        time.sleep(gap)
        return ms

    s_ms, t_ms = [], []
    for r in range(args.rounds):
        if r % 2 == 0:
            s_ms.append(smelt_then_sleep())
            t_ms.append(torch_then_sleep())
        else:
            t_ms.append(torch_then_sleep())
            s_ms.append(smelt_then_sleep())
    smelt.stdin.close()
    smelt.wait()

    ratios = [t / s for s, t in zip(s_ms, t_ms)]
    won = sum(x > 1 for x in ratios)
    n = len(ratios)
    # Two-sided sign test: how likely so lopsided a count is if each round were a coin toss.
    tail = sum(math.comb(n, k) for k in range(min(won, n - won) + 1)) / 2 ** n
    label = args.system + (" + THP" if args.thp else "")
    print("%s, %d rounds: smelt median %.3f ms, %s median %.3f ms" %
          (wl, n, statistics.median(s_ms), label, statistics.median(t_ms)))
    q = statistics.quantiles(ratios, n=4)
    print("%s / smelt per round: median %.3fx (quartiles %.3f, %.3f); smelt faster in %d of %d "
          "rounds (sign test p = %.2g)" % (label, statistics.median(ratios), q[0], q[2], won, n,
                                           min(1.0, 2 * tail)))


if __name__ == "__main__":
    main()
