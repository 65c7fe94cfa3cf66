#!/usr/bin/env python3
"""What each commit of a SQLite database wrote: pages per commit, by table or index.

Reads a *copy* of a live database with its WAL, takes each commit's frames from a second
copy of the WAL (opening the database checkpoints the first one and removes it), and names
each frame's page through SQLite's `dbstat` (docs/performance.md, ninth session: the heads
of ended tables).

    mkdir /tmp/w && cp DB DB-wal DB-shm /tmp/w/ && cp /tmp/w/DB-wal /tmp/w/wal.bin
    python3 scripts/wal-pages.py /tmp/w/DB /tmp/w/wal.bin [COMMITS]

prints the mean pages of the last COMMITS commits (default 200) and their share by name
("?" for pages no table or index holds now: the free list, or pages freed since).
"""

import collections
import sqlite3
import struct
import sys


def commits(wal: bytes) -> list[list[int]]:
    """The page numbers of each commit in the WAL, oldest first (the valid frames only)."""
    page_size = struct.unpack(">I", wal[8:12])[0]
    salt = wal[16:24]
    out, frames, off = [], [], 32
    while off + 24 + page_size <= len(wal):
        page, size_after = struct.unpack(">II", wal[off : off + 8])
        if wal[off + 8 : off + 16] != salt:
            break
        frames.append(page)
        if size_after:  # a commit frame
            out.append(frames)
            frames = []
        off += 24 + page_size
    return out


def main() -> None:
    db, wal_path = sys.argv[1], sys.argv[2]
    last = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    con = sqlite3.connect(db)
    names = dict((page, name) for name, page in con.execute("SELECT name, pageno FROM dbstat"))
    con.close()
    with open(wal_path, "rb") as f:
        found = commits(f.read())[-last:]
    if not found:
        sys.exit("no commit in the WAL")
    print(f"{len(found)} commits, {sum(map(len, found)) / len(found):.1f} pages a commit")
    count = collections.Counter(names.get(p, "?") for c in found for p in c)
    for name, n in count.most_common():
        print(f"  {name:40} {n / len(found):.2f} a commit")


if __name__ == "__main__":
    main()
