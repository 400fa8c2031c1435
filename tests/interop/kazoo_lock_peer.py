#!/usr/bin/python3
"""A kazoo (Python) lock client driven one command per line on stdin.

The kazoo interop tests (tests/integration/kazoo_interop_test.cpp) start it
with the ensemble's connect string and talk to it over its stdin and stdout;
it answers each command with one line. Written against Debian's python3-kazoo
(2.8). Commands:

  acquire KIND PATH TIMEOUT_MS SHARED
      KIND is lock (kazoo's Lock), read (ReadLock) or write (WriteLock).
      SHARED 1 makes the lock with the extra_lock_patterns that make it wait
      for zkrecipes' and Curator's nodes (see docs/promises.md, "Sharing lock
      paths with kazoo"); 0 makes kazoo's default lock. -> "acquired NODE_PATH" | "timeout"
  release                                   -> "released"
  count KIND PATH COUNTER HOLDS READ_EVERY TIMEOUT_MS INTERVALS
      HOLDS holds of a shared lock of KIND (lock: Lock; rw: WriteLock, and a
      ReadLock every READ_EVERY-th hold, none if 0). A write hold adds 1 to
      the decimal number in the znode COUNTER with a get and an unversioned
      set; every hold appends one line to the file INTERVALS for the
      exclusion checker (testkit/checker): "pid thread enter_ns exit_ns
      token kind", CLOCK_MONOTONIC, token = the lock node's czxid.
      -> "counted HOLDS" | "error TEXT"
"""
import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

# The patterns that make kazoo's locks see our nodes (and Curator's) as
# contenders: a mutex waits for "-lock-" nodes; a writer for readers and
# writers; a reader for writers only.
SHARED_PATTERNS = {
    "lock": ["-lock-"],
    "write": ["__READ__", "__WRIT__"],
    "read": ["__WRIT__"],
}


def make_lock(zk, kind, path, shared):
    cls = {"lock": zk.Lock, "read": zk.ReadLock, "write": zk.WriteLock}[kind]
    patterns = SHARED_PATTERNS[kind] if shared else ()
    return cls(path, "kazoo-peer pid=%d" % os.getpid(), extra_lock_patterns=patterns)


def acquired(lock, timeout_s):
    try:
        return lock.acquire(timeout=timeout_s)
    except LockTimeout:
        return False


def count(zk, kind, path, counter, holds, read_every, timeout_s, intervals):
    with open(intervals, "a") as out:
        for i in range(holds):
            read = kind == "rw" and read_every > 0 and i % read_every == read_every - 1
            lock_kind = "lock" if kind == "lock" else ("read" if read else "write")
            lock = make_lock(zk, lock_kind, path, True)
            if not acquired(lock, timeout_s):
                return "error no grant at hold %d" % i
            enter = time.monotonic_ns()
            token = zk.exists(path + "/" + lock.node).czxid
            if not read:
                value = int(zk.get(counter)[0].decode() or "0")
                zk.set(counter, str(value + 1).encode())
            leave = time.monotonic_ns()
            lock.release()
            label = "mutex" if kind == "lock" else ("read" if read else "write")
            out.write("%d %d %d %d %d %s\n" % (os.getpid(), threading.get_native_id(), enter, leave,
                                                token, label))
    return "counted %d" % holds


def main():
    zk = KazooClient(hosts=sys.argv[1], timeout=6.0)
    zk.start(timeout=30)
    print("ready", flush=True)
    held = None
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "acquire":
                kind, path, timeout_ms, shared = words[1], words[2], int(words[3]), words[4] == "1"
                lock = make_lock(zk, kind, path, shared)
                if acquired(lock, timeout_ms / 1000.0):
                    held = lock
                    reply = "acquired %s/%s" % (path, lock.node)
                else:
                    reply = "timeout"
            elif words[0] == "release":
                if held is not None:
                    held.release()
                held = None
                reply = "released"
            elif words[0] == "count":
                reply = count(zk, words[1], words[2], words[3], int(words[4]), int(words[5]),
                              int(words[6]) / 1000.0, words[7])
            else:
                reply = "error unknown command " + words[0]
        except Exception as e:  # the test reads it and fails; the peer goes on
            reply = "error %s: %s" % (type(e).__name__, e)
        print(reply, flush=True)
    zk.stop()
    zk.close()


if __name__ == "__main__":
    main()
