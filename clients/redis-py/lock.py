#!/usr/bin/python3
"""redis-py's Lock (Debian python3-redis) behind locktest's protocol.

All lock logic is the library's: Redis.lock(key, timeout=TTL,
blocking_timeout=acquire timeout).acquire() (SET NX PX, polling), release()
and extend() (Lua compare-and-delete and compare-and-pexpire on the token).
The token the library generates is the owner; nothing is fenced.
A connection error or socket timeout leaves the outcome unknown (error);
LockNotOwnedError and an acquire that ran out of time are definite (fail).
"""

import os
import sys

import redis
from redis.exceptions import LockNotOwnedError, RedisError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from protocol import log, serve  # noqa: E402


class Client:
    def init(self, req):
        host, port = req["nodes"][0].rsplit(":", 1)
        io = req["io_timeout_ms"] / 1000
        self.redis = redis.Redis(host=host, port=int(port), socket_timeout=io, socket_connect_timeout=io)
        self.sleep = req["retry_min_ms"] / 1000
        log("c%d: redis-py %s on %s" % (req["client"], redis.__version__, req["nodes"][0]))
        return {"type": "ok"}

    def lock(self, req, owner=None):
        lk = self.redis.lock(req["key"], timeout=req.get("ttl_ms", 0) / 1000 or None, sleep=self.sleep,
                             blocking_timeout=req["timeout_ms"] / 1000)
        lk.local.token = owner.encode() if owner else None
        return lk

    def acquire(self, req):
        lk = self.lock(req)
        try:
            if lk.acquire():
                return {"type": "ok", "owner": lk.local.token.decode()}
        except RedisError as e:  # the SET may have landed
            return {"type": "error", "error": repr(e)}
        return {"type": "fail", "error": "not acquired within blocking_timeout"}

    def owned(self, req, op):
        try:
            op(self.lock(req, req["owner"]))
        except LockNotOwnedError as e:
            return {"type": "fail", "error": str(e)}
        except RedisError as e:
            return {"type": "error", "error": repr(e)}
        return {"type": "ok"}

    def release(self, req):
        return self.owned(req, lambda lk: lk.release())

    def renew(self, req):
        return self.owned(req, lambda lk: lk.extend(req["ttl_ms"] / 1000, replace_ttl=True))


if __name__ == "__main__":
    c = Client()
    serve({"init": c.init, "acquire": c.acquire, "release": c.release, "renew": c.renew})
