#!/usr/bin/env python3
"""A/B of kslock variants against the peers in the same runs (issue 11, "ablation").

usage: scripts/ab-ratio.py RUNS SIDES -- <lockbench arguments>

SIDES: comma-separated (or |-separated, when a value holds commas) "name=ENV:VAL;ENV2:VAL2@binary" (environment and binary optional;
the binary defaults to target/release/lockbench), e.g. "base,off=KSLOCK_OFF:quick_poll".
Runs every side RUNS times, alternating the order, and prints per cell (lock, workload, threads,
loads, read mix, data lines) the median over the
runs of (kslock kops/s ÷ the best peer's kops/s in the same run), the per-run ratios, the
median kops/s, max/min per-thread ops and p99.9 wait (ms), and the geo-mean of the medians.
Comparing ratios within one run cancels most of the VM's slow and fast phases, which move
every lock's throughput by up to 20% between runs. A run whose locks saw cross-CPU line round
trips 2x apart (lockbench's probe, since bf962a9) mixed two phases of the machine: its ratio
is marked '*', and where some runs of a cell are marked the median of the others is printed
too ("one-phase"). Run it on a quiet machine.
"""
import sys, subprocess, csv, io, statistics, collections, os, math
runs = int(sys.argv[1]); sides = sys.argv[2].split('|' if '|' in sys.argv[2] else ',')
args = sys.argv[sys.argv.index('--')+1:]
def parse(s):
    name, rest = s.split('=', 1) if '=' in s else (s, '')
    binp = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'target', 'release', 'lockbench')
    if '@' in rest: rest, binp = rest.split('@')
    env = dict(os.environ)
    for kv in filter(None, rest.split(';')):
        k, v = kv.split(':', 1); env[k] = v
    return name, env, binp
S = [parse(s) for s in sides]
res = {n: collections.defaultdict(list) for n, _, _ in S}
for r in range(runs):
    order = S if r % 2 == 0 else S[::-1]
    for name, env, binp in order:
        p = subprocess.run([binp] + args + ['--format', 'csv'], capture_output=True, text=True, env=env)
        if p.returncode: print("RC", name, p.returncode, p.stderr[-500:])
        cells = collections.defaultdict(dict)
        for row in csv.DictReader(io.StringIO(p.stdout)):
            # The workload and the data lines too: a suite (lockbench with no subcommand) or a
            # `workload data` run has cells of several workloads and line counts.
            k = (row.get('workload', 'matrix'), row['threads'], row['cs_load'], row.get('outside_load', '0'), row.get('read_pct', '0'), row.get('lines') or '0')
            cells[k][row['lock']] = row
        for k, locks in cells.items():
            ours = [l for l in locks if l.startswith('kslock')]
            peers = [l for l in locks if not l.startswith('kslock')]
            if not peers: continue
            best = max(float(locks[l]['kops']) for l in peers)
            # The machine's phases (lockbench::probe): a run whose locks saw line round trips
            # 2x apart or more compares two machines; it is marked '*' (lockbench before the
            # probe writes no round trips: never marked).
            rts = [float(locks[l].get(c) or 0) for l in locks for c in ('line_rt_ns_min', 'line_rt_ns_max')]
            rts = [x for x in rts if x > 0]
            mixed = bool(rts) and max(rts) >= 2 * min(rts)
            for o in ours:
                row = locks[o]
                mm = float(row['thread_ops_max']) / max(1, float(row['thread_ops_min']))
                res[name][(o,) + k].append((float(row['kops']) / best, float(row['kops']), mm, float(row['wait_p999_ns']) / 1e6, mixed, float(row.get('cpu_ns_per_op') or 0)))
names = [n for n, _, _ in S]
print("cell (lock workload thr cs out rd lines) | " + " | ".join(f"{n}: ratio med [runs, * = mixed phases] kops mm p999 cpu-ns/op" for n in names))
geo = collections.defaultdict(list)
for k in sorted(res[names[0]], key=lambda k: (k[0], k[1], int(k[2]), int(k[3]), int(k[4]), int(k[5]), int(k[6]))):
    out = []
    for n in names:
        v = res[n][k]
        if not v: continue
        med = statistics.median(x[0] for x in v); geo[n].append(med)
        same = [x[0] for x in v if not x[4]]
        same_med = f" one-phase {statistics.median(same):.3f}" if same and len(same) < len(v) else ""
        runs_txt = "[" + ", ".join(f"{x[0]:.2f}{'*' if x[4] else ''}" for x in v) + "]"
        out.append(f"{med:.3f} {runs_txt}{same_med} {statistics.median(x[1] for x in v):.0f} mm{statistics.median(x[2] for x in v):.1f} p{statistics.median(x[3] for x in v):.1f} c{statistics.median(x[5] for x in v):.0f}")
    print(k, " | ".join(out))
def gm(xs): return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan')
for n in names:
    print("geo", n, round(gm(geo[n]), 3))
# Per family (lock, workload, read mix) over cells with 8+ threads, and the overall line as the
# suite's scoreboard computes it: the geo-mean over families.
fams = collections.defaultdict(lambda: collections.defaultdict(list))
for n in names:
    for k, v in res[n].items():
        if int(k[2]) >= 8 and v:
            fams[(k[0], k[1], k[5])][n].append(statistics.median(x[0] for x in v))
print("family (lock workload rd) 8+ threads | " + " | ".join(names))
for f in sorted(fams):
    print(f, " | ".join(f"{gm(fams[f][n]):.3f}" for n in names))
print("overall", " | ".join(f"{n} {gm([gm(fams[f][n]) for f in fams if fams[f][n]]):.3f}" for n in names))
