#!/usr/bin/env python3
"""The optimal DAG extraction of extraction-gym's e-graphs, by integer programming.

Issue 27 asks how close fxhlo's extractor (`passes/examples/extraction_gym.rs`) comes to the
best known costs on the TENSAT e-graphs the gym publishes. This solves the same problem
exactly (or to a proven bound, within the time limit) with HiGHS through scipy:

    minimize   sum over e-nodes n of cost(n) * x_n            x_n in {0, 1}
    subject to sum over n in a root class of x_n >= 1
               sum over m in class c of x_m >= x_n             for each child class c of n
               t_c >= t_d + 1 - N (1 - x_n)                    for n in c, each child class d
                                                               (no cycle: a topological order)

Usage: scripts/extraction_ilp.py [--time-limit S] data/tensat/*.json
Needs scipy (`.venv/bin/pip install scipy`); not part of the tests.
"""

import argparse
import json
import sys
import time


def solve(path, time_limit):
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    data = json.load(open(path))
    nodes = data["nodes"]
    names = list(nodes)
    index = {n: i for i, n in enumerate(names)}
    classes = sorted({nodes[n]["eclass"] for n in names})
    cindex = {c: i for i, c in enumerate(classes)}
    members = [[] for _ in classes]
    for n in names:
        members[cindex[nodes[n]["eclass"]]].append(index[n])
    nn, nc = len(names), len(classes)
    big = nc + 1
    # Variables: x_0..x_{nn-1} (binary), then t_0..t_{nc-1} (order, 0..nc).
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0

    def row(entries, lower, upper):
        nonlocal r
        for col, val in entries:
            rows.append(r)
            cols.append(col)
            vals.append(val)
        lo.append(lower)
        hi.append(upper)
        r += 1

    for c in data["root_eclasses"]:
        row([(m, 1.0) for m in members[cindex[c]]], 1, np.inf)
    for n in names:
        i = index[n]
        c = cindex[nodes[n]["eclass"]]
        for d in sorted({cindex[nodes[ch]["eclass"]] for ch in nodes[n]["children"]}):
            row([(m, 1.0) for m in members[d]] + [(i, -1.0)], 0, np.inf)
            if d == c:
                row([(i, 1.0)], 0, 0)  # a node reading its own class is never chosen
            else:
                # t_c - t_d - N x_n >= 1 - N
                row([(nn + c, 1.0), (nn + d, -1.0), (i, -float(big))], 1 - big, np.inf)
    costs = np.array([float(nodes[n]["cost"]) for n in names] + [0.0] * nc)
    a = coo_matrix((vals, (rows, cols)), shape=(r, nn + nc)).tocsr()
    integrality = np.array([1] * nn + [0] * nc)
    bounds = Bounds(np.zeros(nn + nc), np.array([1.0] * nn + [float(nc)] * nc))
    start = time.perf_counter()
    res = milp(costs, constraints=LinearConstraint(a, lo, hi), integrality=integrality, bounds=bounds,
               options={"time_limit": time_limit, "disp": False})
    took = time.perf_counter() - start
    bound = getattr(res, "mip_dual_bound", None)
    return {
        "file": path.split("/")[-1].removesuffix(".json"),
        "classes": nc,
        "nodes": nn,
        "status": "optimal" if res.status == 0 else ("time limit" if res.status == 1 else res.message.split(".")[0]),
        "cost": res.fun,
        "bound": bound,
        "s": took,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per e-graph (default 120)")
    args = ap.parse_args()
    try:
        import scipy  # noqa: F401
    except ImportError:
        sys.exit("needs scipy: .venv/bin/pip install scipy")
    print("| e-graph | classes | nodes | ILP cost | lower bound | status | s |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for f in args.files:
        s = solve(f, args.time_limit)
        fmt = lambda v: "-" if v is None else f"{v:.4f}"
        print(f"| {s['file']} | {s['classes']} | {s['nodes']} | {fmt(s['cost'])} | {fmt(s['bound'])} | {s['status']} | {s['s']:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
