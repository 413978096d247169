#!/usr/bin/env python3
"""The error of Prometheus's histogram_quantile() over the buckets `bpfql serve` exports for
percentile() (two per power of two: le = 0, 1, 2, 3, 5, 7, 11, 15, 23, ..., 2^36 - 1) and for
hist() (one per power of two), against the exact quantile of the same values. Synthetic but
exact: the values are integers, bucketed as the kernel would, and histogram_quantile is
Prometheus's own linear interpolation (promql/quantile.go: bucketQuantile).

  bench/serve/quantile_error.py [--samples 200000]
"""
import argparse, bisect, math, random

TOP = 36


def bounds(per_power):
    les = [0, 1]
    for k in range(1, TOP):
        if per_power == 2:
            les.append((1 << k) + (1 << (k - 1)) - 1)
        les.append((1 << (k + 1)) - 1)
    return les


def histogram_quantile(q, les, counts):
    """counts: cumulative, per le, then +Inf last (as Prometheus sees the series)."""
    total = counts[-1]
    rank = q * total
    i = next(i for i, c in enumerate(counts) if c >= rank)
    if i == len(les):  # in +Inf: Prometheus returns the highest finite bound
        return les[-1]
    start = 0 if i == 0 else les[i - 1]
    below = 0 if i == 0 else counts[i - 1]
    if i == 0 and les[0] <= 0:
        return les[0]
    return start + (les[i] - start) * (rank - below) / (counts[i] - below)


def exact_quantile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=200000)
    a = ap.parse_args()
    rng = random.Random(1)
    dists = {
        "lognormal latency (median 50 us, sigma 1)": lambda: int(rng.lognormvariate(math.log(50_000), 1.0)),
        "lognormal latency (median 2 ms, sigma 0.3)": lambda: int(rng.lognormvariate(math.log(2_000_000), 0.3)),
        "exponential (mean 10 us)": lambda: int(rng.expovariate(1 / 10_000)),
        "uniform 1..1 000 000": lambda: rng.randint(1, 1_000_000),
        "bimodal 8 / 4096 bytes": lambda: 8 if rng.random() < 0.7 else 4096,
    }
    print("| distribution | q | exact | percentile() buckets | error | hist() buckets | error |")
    print("|---|---|---|---|---|---|---|")
    worst = {1: 0.0, 2: 0.0}
    for name, draw in dists.items():
        values = sorted(draw() for _ in range(a.samples))
        row = {}
        for per in (2, 1):
            les = bounds(per)
            counts = [0] * (len(les) + 1)
            for v in values:
                counts[bisect.bisect_left(les, v)] += 1
            for i in range(1, len(counts)):
                counts[i] += counts[i - 1]
            row[per] = les, counts
        for q in (0.5, 0.9, 0.99):
            exact = exact_quantile(values, q)
            cells = []
            for per in (2, 1):
                est = histogram_quantile(q, *row[per])
                err = (est - exact) / exact if exact else 0.0
                worst[per] = max(worst[per], abs(err))
                cells += [f"{est:.0f}", f"{100 * err:+.1f} %"]
            print(f"| {name} | {q} | {exact} | " + " | ".join(cells) + " |")
    print(f"\nworst |error|: percentile() buckets {100 * worst[2]:.1f} %, hist() buckets {100 * worst[1]:.1f} %")


if __name__ == "__main__":
    main()
