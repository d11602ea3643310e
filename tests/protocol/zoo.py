#!/usr/bin/env python3
"""Locks broken the ways real lock code breaks, for testing what locktest's
search reports about locks it was not built for.

    zoo.py MODE

It is redislock.py (the correct unfenced lock) but for one thing:

    open         acquire answers ok without taking anything: every client
                 is let in, with or without a fault
    del-release  release is a plain DEL that does not check the owner: a
                 client whose lease ran out deletes the next holder's key
    token-after  a fenced lock that takes the lock with SET NX PX, then
                 fetches its fencing token with a separate INCR, announcing
                 the checkpoint after-set between the two: a client paused
                 there past its lease gets a token newer than the holder's
                 that took the lock meanwhile, so the resource takes the
                 stale client's writes and refuses the rightful holder's.
                 Run it with --exec-checkpoints after-set.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redislock  # noqa: E402


MODES = ("open", "del-release", "token-after")

# The checkpoint token-after announces between its SET and its INCR.
AFTER_SET = "after-set"


class Zoo(redislock.RedisLock):
    def __init__(self, mode):
        super().__init__(fenced=False)
        self.mode = mode

    def acquire(self, req):
        if self.mode == "open":
            self.seq += 1
            return {"type": "ok", "owner": "c%d-%d" % (self.client, self.seq), "token": 0,
                    "validity_ms": req["ttl_ms"], "cmds": 0}
        reply = super().acquire(req)
        if self.mode != "token-after" or reply["type"] != "ok":
            return reply
        # The bug: the token is not taken in the step that took the lock.
        redislock.checkpoint(req, AFTER_SET)
        try:
            reply["token"] = self.redis.call("INCR", req["key"] + ":token")
        except (OSError, ValueError, redislock.RedisError) as e:
            return {"type": "error", "error": "token: %r" % e, "cmds": reply["cmds"] + 1}
        reply["cmds"] += 1
        return reply

    def release(self, req):
        if self.mode == "del-release":
            try:
                self.redis.call("DEL", req["key"])
            except (OSError, ValueError, redislock.RedisError) as e:
                return {"type": "error", "error": repr(e), "cmds": 1}
            return {"type": "ok", "cmds": 1}
        return super().release(req)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in MODES:
        sys.exit("usage: zoo.py " + "|".join(MODES))
    redislock.serve(Zoo(sys.argv[1]).handle)
