#!/usr/bin/env python3
"""pmedian_cpu: gpuclust's CPU p-median against FasterPAM on a TSPLIB instance.

gpuclust: one fit of the CPU reference backend with the default options
(test/engine/pmedian_bench: location-allocation from the D-sampling race,
then the swap improvement the default rule picks), per thread count.
FasterPAM: the kmedoids package, on the dissimilarity matrix computed in
the same run (float64, counted in its time), from a random initialisation
(random_state 0; --inits random,build adds BUILD), on one thread and on
all of them.

Wall and CPU times (user + system) are printed: on a shared machine the
CPU time of a one-thread run is the steadier measure.  Both objectives: the sum over rows of the Euclidean distance
to the nearest medoid, recomputed here in float64 from the medoids.

Usage (from the repository root; numpy and kmedoids in the Python used):
  bench/pmedian_cpu.py [--instance fi10639] [--p 50] [--threads 1,0]
                       [--binary test/engine/pmedian_bench] [--repeat 1]
"""
import argparse
import gzip
import importlib.metadata
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'data', 'tsp')


def read_tsp(name):
    """The coordinates of a TSPLIB instance (NODE_COORD_SECTION: id x y)."""
    for base in (os.environ.get('TSP_DIR', DATA), DATA, '/work/shared/data/tsp'):
        for suffix, opener in (('.tsp.gz', gzip.open), ('.tsp', open)):
            path = os.path.join(base, name + suffix)
            if os.path.exists(path):
                pts, on = [], False
                with opener(path, 'rt') as f:
                    for line in f:
                        if line.startswith('NODE_COORD_SECTION'):
                            on = True
                        elif line.startswith('EOF'):
                            break
                        elif on and len(line.split()) == 3:
                            pts.append(tuple(float(v) for v in line.split()[1:]))
                return pts
    sys.exit('cannot find %s.tsp(.gz)' % name)


def fields(line):
    return dict(re.findall(r'(\w+)=(\S+)', line))


def objective(x, medoids):
    import numpy as np
    total = 0.0
    for i in range(0, len(x), 4096):
        total += np.sqrt(((x[i:i + 4096, None, :] - x[medoids][None, :, :]) ** 2).sum(-1)).min(1).sum()
    return total


def gpuclust(binary, path, p, threads):
    t0 = time.time()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, path, str(p), str(threads)], capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = 1000 * (time.time() - t0)
    if out.returncode != 0:
        sys.exit('%s failed:\n%s%s' % (binary, out.stdout, out.stderr))
    lines = out.stdout.splitlines()
    f = fields(lines[0])
    f['medoids'] = [int(v) for v in lines[1].split()[1:]]
    f['wall_ms'] = '%.1f' % wall
    f['cpu_ms'] = '%.1f' % (1000 * (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))
    return f


def fasterpam(x, p, init, n_cpu):
    import numpy as np
    import kmedoids
    t0, c0 = time.time(), time.process_time()
    d = np.empty((len(x), len(x)))
    for i in range(0, len(x), 1024):
        d[i:i + 1024] = np.sqrt(((x[i:i + 1024, None, :] - x[None, :, :]) ** 2).sum(-1))
    t1, c1 = time.time(), time.process_time()
    r = kmedoids.fasterpam(d, p, init=init, random_state=0, n_cpu=n_cpu)
    t2, c2 = time.time(), time.process_time()
    med = np.array(r.medoids)
    return {'matrix_ms': 1000 * (t1 - t0), 'swap_ms': 1000 * (t2 - t1),
            'total_ms': 1000 * (t2 - t0), 'objective': objective(x, med),
            'cpu_ms': 1000 * (c2 - c0), 'matrix_cpu_ms': 1000 * (c1 - c0),
            'swaps': r.n_swap, 'iterations': r.n_iter}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--instance', default='fi10639')
    ap.add_argument('--p', type=int, default=50)
    ap.add_argument('--threads', default='1,0', help='gpuclust thread counts (0: every core)')
    ap.add_argument('--binary', default='test/engine/pmedian_bench')
    ap.add_argument('--repeat', type=int, default=1)
    ap.add_argument('--inits', default='random', help="FasterPAM's initialisations (random, build)")
    ap.add_argument('--no-fasterpam', action='store_true')
    args = ap.parse_args()
    import numpy as np
    x = np.array(read_tsp(args.instance))
    print('instance=%s n=%d p=%d cores=%d' % (args.instance, len(x), args.p, os.cpu_count()))
    with tempfile.NamedTemporaryFile('w', suffix='.txt', delete=False) as tmp:
        for a, b in x:
            tmp.write('%r %r\n' % (float(a), float(b)))
    try:
        for threads in [int(t) for t in args.threads.split(',')]:
            for _ in range(args.repeat):
                f = gpuclust(args.binary, tmp.name, args.p, threads)
                print('gpuclust threads=%d method=%s improve=%s objective=%s objective_check=%.10g '
                      'medoids_hash=%s iterations=%s swaps=%s total_ms=%s cpu_ms=%s seeding_ms=%s '
                      'location_ms=%s improve_ms=%s' % (
                          threads, f['method'], f['improve'], f['objective'],
                          objective(x, np.array(f['medoids'])), f['medoids_hash'],
                          f['iterations'], f['swaps'], f['total_ms'], f['cpu_ms'], f['seeding_ms'],
                          f['location_ms'], f['improve_ms']), flush=True)
    finally:
        os.unlink(tmp.name)
    if args.no_fasterpam:
        return
    version = importlib.metadata.version('kmedoids')
    for n_cpu in (1, os.cpu_count()):
        for init in args.inits.split(','):
            for _ in range(args.repeat):
                r = fasterpam(x, args.p, init, n_cpu)
                print('fasterpam kmedoids=%s n_cpu=%d init=%s objective=%.10g swaps=%d iterations=%d '
                      'total_ms=%.1f cpu_ms=%.1f matrix_ms=%.1f matrix_cpu_ms=%.1f swap_ms=%.1f' % (
                          version, n_cpu, init, r['objective'], r['swaps'], r['iterations'],
                          r['total_ms'], r['cpu_ms'], r['matrix_ms'], r['matrix_cpu_ms'],
                          r['swap_ms']), flush=True)


if __name__ == '__main__':
    main()
