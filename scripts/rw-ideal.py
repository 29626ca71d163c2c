#!/usr/bin/env python3
"""The ideal rw lock with two running threads on two CPUs (docs/experiments.md, "Reads rarely
pair up": the rwsem's 50%-read target).

usage: scripts/rw-ideal.py [OPS]

lockbench's bound for a cell with read fraction r on p = 2 CPUs is 1/((1-r) + r/2) times the
best 1-thread rate: every read overlaps another read. Two threads that each draw their next
operation at random cannot get that, whatever the lock does: a write excludes the other CPU,
and a thread that drew a write waits for the other thread's read in progress. This simulates
the best a lock can do with them, in continuous time, without scheduler or wakeup costs:

* every operation lasts 1 (the section) plus `ovh`, the acquisition's own cost on a line the
  other CPU wrote (lock word and lockbench's exclusion checker), paid by every operation;
* a waiting thread goes first when the other finishes (writer preference: a thread that drew
  a write keeps new reads out; the alternative, readers first, starves writes and runs at 1.0).

It prints the throughput ÷ the 1-thread rate (which pays no `ovh`) and ÷ lockbench's bound,
which is what lockbench's `eff` column reports for the 2-thread cells.
"""
import random
import sys


def simulate(r, ovh, ops, seed=1):
    rnd = random.Random(seed)
    read = [rnd.random() < r, rnd.random() < r]  # each thread's current operation
    end = [None, None]  # when its section ends (None: not holding)
    kind = [None, None]  # 'r' / 'w' while holding
    waiting = [False, False]

    def start(i, t):
        end[i], kind[i] = t + 1 + ovh, ('r' if read[i] else 'w')

    def may_start(i):
        j = 1 - i
        return end[j] is None or (read[i] and kind[j] == 'r')

    for i in (0, 1):
        if may_start(i):
            start(i, 0.0)
        else:
            waiting[i] = True
    t, done = 0.0, 0
    while done < ops:
        i = min((k for k in (0, 1) if end[k] is not None), key=lambda k: end[k])
        t, end[i], kind[i] = end[i], None, None
        done += 1
        read[i] = rnd.random() < r
        j = 1 - i
        if waiting[j]:  # the waiter goes first
            waiting[j] = False
            start(j, t)
        if may_start(i):
            start(i, t)
        else:
            waiting[i] = True
    return done / t


def main():
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 400_000
    print("reads  ovh   ÷ 1-thread  ÷ lockbench bound")
    for r in (0.5, 0.9):
        bound = 1 / ((1 - r) + r / 2)
        for ovh in (0.0, 0.05, 0.1, 0.2):
            x = simulate(r, ovh, ops)
            print(f"{r:4.0%}  {ovh:4.2f}   {x:9.3f}  {x / bound:9.3f}")


if __name__ == "__main__":
    main()
