#!/usr/bin/env python3
"""pmedian_tsp: the p-median benchmarks on TSPLIB instances.

  phases   the paper's capacitated workload (Luong & Taillard, Tables 4-8):
           q_i = (107 floor|x_i| + 97 floor|y_i|) mod 29 + 1, Q = 300,
           T = 290 (p = ceil(sum q / T)); sample, global and small phases
           with 300 iterations, GPU and CPU in the same run (the engine
           binary does both), next to the paper's best speed-ups.
  quality  uncapacitated p-median: our location-allocation without the
           swap improvement and with the default options (the rule picks
           the improvement), GPU and CPU, against FasterPAM (the kmedoids
           package) whose results are read from
           bench/results/pmedian-fasterpam.txt.
  fasterpam  computes that reference file (needs numpy and kmedoids; the
           dissimilarity matrix of sw24978 takes 2.5 GB in float32);
           --instances limits it to some instances, merged into the file.

Usage (from the repository root):
  bench/pmedian_tsp.py phases  [--binary B] [--cpu-only] [--iter N]
  bench/pmedian_tsp.py quality [--binary B] [--cpu-only]
  bench/pmedian_tsp.py fasterpam
Results are printed and written under bench/results/ (or $OUT).
"""
import argparse
import importlib.metadata
import datetime
import gzip
import os
import re
import subprocess
import sys
import time

DATA = os.path.join(os.path.dirname(__file__), '..', '..', 'shared', 'data', 'tsp')
RESULTS = os.environ.get('OUT') or os.path.join(os.path.dirname(__file__), 'results')
INSTANCES = ['sw24978', 'ch71009', 'usa115475']
QUALITY = [('dj38', 3), ('lu980', 10), ('fi10639', 103), ('sw24978', 50), ('sw24978', 158)]

# The paper's best GPU speed-up per phase over both of its configurations
# (Table 7 and 8 "GPU2" columns, Table 5 for global; None: not reported)
PAPER_BEST = {
    'sw24978': {'sample': 16.8, 'global': None, 'small': 7.6},
    'ch71009': {'sample': 20.0, 'global': None, 'small': 10.1},
    'usa115475': {'sample': 24.2, 'global': 58.9, 'small': 11.3},
}


def instance_path(name):
    for base in (os.environ.get('TSP_DIR', DATA), DATA, os.path.join('.devpg', 'tsp')):
        path = os.path.join(base, name + '.tsp.gz')
        if os.path.exists(path):
            return path
    sys.exit('cannot find %s.tsp.gz under ../shared/data/tsp' % name)


def run(binary, args):
    out = subprocess.run([binary] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit('%s %s failed:\n%s%s' % (binary, ' '.join(args), out.stdout, out.stderr))
    return out.stdout


def fields(line):
    return dict(re.findall(r'(\w+)=(\S+)', line))


def write(name, text):
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name)
    with open(path, 'w') as f:
        f.write(text)
    print(text)
    print('written to', path)


def phases(args):
    rows = ['| instance | n | p | phase | CPU ms | GPU ms | speed-up | paper best |',
            '|---|---|---|---|---|---|---|---|']
    extra = []
    for inst in INSTANCES:
        out = run(args.binary, ['phases', instance_path(inst), str(args.iter)]
                  + (['cpu'] if args.cpu_only else []))
        byd = {}
        for line in out.splitlines():
            if line.startswith('phases '):
                f = fields(line)
                byd[f['device']] = f
            else:
                extra.append(line)
        cpu, gpu = byd.get('cpu'), byd.get('gpu')
        for phase in ('sample', 'global', 'small'):
            c = float(cpu[phase + '_ms'])
            g = float(gpu[phase + '_ms']) if gpu else None
            best = PAPER_BEST[inst][phase]
            rows.append('| %s | %s | %s | %s | %.1f | %s | %s | %s |' % (
                inst, cpu['n'], cpu['p'], phase, c,
                '%.2f' % g if g is not None else '-',
                '%.1fx' % (c / g) if g else '-',
                '%.1fx' % best if best else 'n/a'))
        rows.append('| %s | | | objective / violation | %s / %s | %s | | |' % (
            inst, cpu['objective'], cpu['violation'],
            '%s / %s' % (gpu['objective'], gpu['violation']) if gpu else '-'))
    stamp = datetime.date.today().isoformat()
    text = ('# p-median phases, capacitated (Q = 300, T = 290), %d iterations, %s\n\n' %
            (args.iter, stamp) + '\n'.join(rows) + '\n')
    if extra:
        text += '\n```\n' + '\n'.join(extra) + '\n```\n'
    write('pmedian-phases-%s-%s.md' % ('cpu' if args.cpu_only else 'gpu', stamp), text)


def read_points(path):
    pts = []
    with gzip.open(path, 'rt') as f:
        on = False
        for line in f:
            if line.startswith('NODE_COORD_SECTION'):
                on = True
            elif line.startswith('EOF'):
                break
            elif on:
                parts = line.split()
                if len(parts) == 3:
                    pts.append((float(parts[1]), float(parts[2])))
    return pts


def fasterpam(args):
    import numpy as np
    import kmedoids
    refpath = os.path.join(RESULTS, 'pmedian-fasterpam.txt')
    keep = {}
    if args.instances and os.path.exists(refpath):
        for line in open(refpath):
            f = fields(line)
            keep[(f['instance'], int(f['p']))] = line.rstrip('\n')
    lines = []
    for inst, p in QUALITY:
        if args.instances and inst not in args.instances.split(','):
            continue
        x = np.array(read_points(instance_path(inst)))
        t0 = time.time()
        d = np.empty((len(x), len(x)), dtype=np.float32)
        for i in range(0, len(x), 2048):
            d[i:i + 2048] = np.sqrt(((x[i:i + 2048, None, :] - x[None, :, :]) ** 2).sum(-1))
        t1 = time.time()
        r = kmedoids.fasterpam(d, p, random_state=0, n_cpu=1)
        t2 = time.time()
        med = np.array(r.medoids)
        obj = 0.0
        for i in range(0, len(x), 4096):
            obj += np.sqrt(((x[i:i + 4096, None, :] - x[med][None, :, :]) ** 2).sum(-1)).min(1).sum()
        lines.append('fasterpam instance=%s n=%d p=%d objective=%.10g matrix_ms=%.1f '
                     'fasterpam_ms=%.1f swaps=%d iterations=%d kmedoids=%s' % (
                         inst, len(x), p, obj, 1000 * (t1 - t0), 1000 * (t2 - t1),
                         r.n_swap, r.n_iter, importlib.metadata.version('kmedoids')))
        print(lines[-1], flush=True)
        keep.pop((inst, p), None)
        del d
    write('pmedian-fasterpam.txt', '\n'.join(list(keep.values()) + lines) + '\n')


def quality(args):
    ref = {}
    refpath = os.path.join(os.path.dirname(__file__), 'results', 'pmedian-fasterpam.txt')
    if os.path.exists(refpath):
        for line in open(refpath):
            f = fields(line)
            ref[(f['instance'], int(f['p']))] = f
    rows = ['| instance | p | device | options | improvement run | objective | vs FasterPAM | ms | FasterPAM ms (matrix + swaps) |',
            '|---|---|---|---|---|---|---|---|---|']
    for inst, p in QUALITY:
        out = run(args.binary, ['quality', instance_path(inst), str(p)]
                  + (['cpu'] if args.cpu_only else []))
        r = ref.get((inst, p))
        for line in out.splitlines():
            if not line.startswith('quality '):
                continue
            f = fields(line)
            obj = float(f['objective'])
            rows.append('| %s | %d | %s | %s | %s | %.1f | %s | %s | %s |' % (
                inst, p, f['device'], f['options'], f['improve'], obj,
                '%+.2f%%' % (100 * (obj / float(r['objective']) - 1)) if r else '-',
                f['ms'],
                '%.0f (%s + %s)' % (float(r['matrix_ms']) + float(r['fasterpam_ms']),
                                    r['matrix_ms'], r['fasterpam_ms']) if r else '-'))
    stamp = datetime.date.today().isoformat()
    text = ('# p-median quality against FasterPAM (kmedoids), uncapacitated, %s\n\n' % stamp
            + '\n'.join(rows) + '\n')
    write('pmedian-quality-%s-%s.md' % ('cpu' if args.cpu_only else 'gpu', stamp), text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('mode', choices=['phases', 'quality', 'fasterpam'])
    ap.add_argument('--binary', default='test/engine/pmedian_test')
    ap.add_argument('--cpu-only', action='store_true')
    ap.add_argument('--iter', type=int, default=300)
    ap.add_argument('--instances', help='fasterpam: comma-separated instances only')
    args = ap.parse_args()
    {'phases': phases, 'quality': quality, 'fasterpam': fasterpam}[args.mode](args)


if __name__ == '__main__':
    main()
