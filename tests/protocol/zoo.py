#!/usr/bin/env python3
"""Locks broken the ways real lock code breaks, for testing what locktest's
search reports about locks it was not built for.

    zoo.py MODE

It is redislock.py (the correct unfenced lock) but for one thing:

    open         acquire answers ok without taking anything: every client
                 is let in, with or without a fault
    del-release  release is a plain DEL that does not check the owner: a
                 client whose lease ran out deletes the next holder's key
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redislock  # noqa: E402


class Zoo(redislock.RedisLock):
    def __init__(self, mode):
        super().__init__(fenced=False)
        self.mode = mode

    def acquire(self, req):
        if self.mode == "open":
            self.seq += 1
            return {"type": "ok", "owner": "c%d-%d" % (self.client, self.seq), "token": 0,
                    "validity_ms": req["ttl_ms"], "cmds": 0}
        return super().acquire(req)

    def release(self, req):
        if self.mode == "del-release":
            try:
                self.redis.call("DEL", req["key"])
            except (OSError, ValueError, redislock.RedisError) as e:
                return {"type": "error", "error": repr(e), "cmds": 1}
            return {"type": "ok", "cmds": 1}
        return super().release(req)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("open", "del-release"):
        sys.exit("usage: zoo.py open|del-release")
    redislock.serve(Zoo(sys.argv[1]).handle)
