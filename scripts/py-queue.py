#!/usr/bin/env python3
"""Python threads through queue.Queue: a real-program pattern for the preload.

CPython's GIL is a pthread mutex and condvar, signalled with the mutex held (docs/experiments.md,
"Signal under the mutex").

usage: python3 scripts/py-queue.py [PRODUCERS] [CONSUMERS] [ITEMS]   (defaults 4 4 20000)

Producers put ITEMS integers each into one queue.Queue; consumers take them until a None each,
and every take is counted under a threading.Condition. Checks the sum and the count, prints
the wall time. CPython's GIL is a pthread mutex and condvars (which the preload serves); its
locks and queue waits are semaphores (which it does not). Compare
`python3 scripts/py-queue.py` with `LD_PRELOAD=target/release/libkslock_preload.so python3
scripts/py-queue.py`, runs alternated.
"""
import queue
import sys
import threading
import time

producers, consumers, items = (int(a) for a in (sys.argv[1:] + ["4", "4", "20000"][len(sys.argv[1:]):]))
q = queue.Queue()
cv = threading.Condition()
taken = [0]
sums = []


def produce():
    for i in range(items):
        q.put(i)


def consume():
    s = 0
    while True:
        v = q.get()
        if v is None:
            break
        s += v
        with cv:
            taken[0] += 1
            cv.notify_all()
    sums.append(s)


t0 = time.monotonic()
cs = [threading.Thread(target=consume) for _ in range(consumers)]
ps = [threading.Thread(target=produce) for _ in range(producers)]
for t in cs + ps:
    t.start()
for t in ps:
    t.join()
with cv:
    assert cv.wait_for(lambda: taken[0] == producers * items, timeout=120), taken[0]
for _ in cs:
    q.put(None)
for t in cs:
    t.join()
assert sum(sums) == producers * sum(range(items)), sum(sums)
print(f"{time.monotonic() - t0:.3f} s ({producers} producers, {consumers} consumers, {items} items each)")
