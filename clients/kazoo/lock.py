#!/usr/bin/python3
"""Kazoo's Lock recipe on ZooKeeper (Debian python3-kazoo) behind locktest's
protocol.

All lock logic is the library's: an ephemeral sequential znode under
/locktest/<key>, held while the client's session lives. The session timeout
is the TTL, so a holder whose session expires (a paused client) loses the
lock without being told. The znode's name is the owner; nothing is fenced.
Kazoo cannot renew a lock: renew answers fail.
"""

import os
import sys

import kazoo
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.recipe.lock import Lock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from protocol import log, serve  # noqa: E402


class Client:
    def init(self, req):
        io = req["io_timeout_ms"] / 1000
        # Commands give up after the I/O timeout rather than retry forever:
        # a request must be answered by its deadline.
        self.zk = KazooClient(hosts=",".join(req["nodes"]), timeout=req["ttl_ms"] / 1000,
                              command_retry={"max_tries": 1, "deadline": io})
        self.zk.start(timeout=req["timeout_ms"] / 1000)
        self.locks = {}
        log("c%d: kazoo %s on %s" % (req["client"], kazoo.version.__version__, req["nodes"]))
        return {"type": "ok"}

    def acquire(self, req):
        lk = self.locks.setdefault(req["key"], Lock(self.zk, "/locktest/" + req["key"]))
        try:
            if lk.acquire(timeout=req["timeout_ms"] / 1000):
                return {"type": "ok", "owner": lk.node}
        except LockTimeout as e:
            return {"type": "fail", "error": str(e)}
        except KazooException as e:  # the znode may have been created
            return {"type": "error", "error": repr(e)}
        return {"type": "fail", "error": "not acquired before the deadline"}

    def release(self, req):
        lk = self.locks.get(req["key"])
        if lk is None or lk.node != req["owner"]:
            return {"type": "fail", "error": "not held by this client"}
        try:
            if lk.release():
                return {"type": "ok"}
        except KazooException as e:
            return {"type": "error", "error": repr(e)}
        return {"type": "fail", "error": "not held"}

    def renew(self, req):
        return {"type": "fail", "error": "kazoo's Lock has no renewal: the session keeps it"}


if __name__ == "__main__":
    c = Client()
    serve({"init": c.init, "acquire": c.acquire, "release": c.release, "renew": c.renew})
