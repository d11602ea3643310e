#!/usr/bin/env python3
"""A lock client that is slow to start, for locktest's tests.

    slowinit.py SECONDS

It is redislock.py, except that client N takes N×SECONDS to answer init,
as a client that loads a large runtime or dials slowly does. As it answers,
it logs "answered init at monotonic NS" to stderr (the worker's log), on
the clock the history's times are on (CLOCK_MONOTONIC).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redislock  # noqa: E402


def main():
    delay = float(sys.argv[1])
    lock = redislock.RedisLock(fenced=False)

    def handle(req):
        if req["type"] != "init":
            return lock.handle(req)
        time.sleep(req["client"] * delay)
        reply = lock.handle(req)
        redislock.log("c%d: answered init at monotonic %d" % (req["client"], time.monotonic_ns()))
        return reply

    redislock.serve(handle)


if __name__ == "__main__":
    main()
