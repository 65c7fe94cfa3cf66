#!/usr/bin/env python3
"""How the threads of a machine of two CPUs spread over them: samples each CPU's run queue
length (`nr_running` in the kernel's /sys/kernel/debug/sched/debug, as root, debugfs
mounted) every 3 ms for SECONDS, after DELAY seconds, and prints the share of samples in
each state (CPU 0's threads, CPU 1's; 3 means 3 or more). The sampler's own thread is left
out of the CPU it runs on. A state such as (0, 2) is a CPU idle while the other has a
thread waiting for it (docs/performance.md, "Now").

    mount -t debugfs none /sys/kernel/debug   # once, if /sys/kernel/debug is empty
    python3 scripts/runqueues.py SECONDS [DELAY]
"""
import collections
import os
import re
import sys
import time

me = os.getpid()
seconds = float(sys.argv[1])
delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
time.sleep(delay)
end = time.time() + seconds
counts = collections.Counter()
n = 0
while time.time() < end:
    with open("/sys/kernel/debug/sched/debug") as f:
        text = f.read()
    state = []
    for cpu in re.split(r"\ncpu#", text)[1:3]:
        running = int(re.search(r"\.nr_running\s*:\s*(\d+)", cpu).group(1))
        if int(re.search(r"\.curr->pid\s*:\s*(\d+)", cpu).group(1)) == me:
            running -= 1
        state.append(min(running, 3))
    counts[tuple(state)] += 1
    n += 1
    time.sleep(0.003)
for state, k in sorted(counts.items()):
    print(state, f"{100 * k / n:.1f}%")
print("samples", n)
