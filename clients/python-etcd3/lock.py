#!/usr/bin/python3
"""python-etcd3's Lock (Debian python3-etcd3) behind locktest's protocol.

All lock logic is the library's: etcd3.client(...).lock(key, ttl), a
transaction that puts the key with a new lease of --ttl (whole seconds,
rounded up) if nobody created it, retried on a watch of the key until the
acquire timeout; release deletes the key if it still holds this lock's
uuid; renew refreshes the lease. The client dials the first of the three
members. Nothing is fenced.
"""

import math
import os
import sys

import etcd3

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from protocol import log, serve  # noqa: E402


class Client:
    def init(self, req):
        host, port = req["nodes"][0].rsplit(":", 1)
        self.ttl = max(1, math.ceil(req["ttl_ms"] / 1000))
        self.etcd = etcd3.client(host=host, port=int(port), timeout=req["io_timeout_ms"] / 1000)
        self.locks = {}
        log("c%d: python-etcd3 on %s, lease %d s" % (req["client"], req["nodes"][0], self.ttl))
        return {"type": "ok"}

    def acquire(self, req):
        lk = self.locks.get(req["key"])
        if lk is None:
            lk = self.locks[req["key"]] = self.etcd.lock(req["key"], ttl=self.ttl)
        try:
            if lk.acquire(timeout=req["timeout_ms"] / 1000):
                return {"type": "ok", "owner": lk.uuid.hex()}
        except Exception as e:  # the lock may have been taken; the library's own crash too
            return {"type": "error", "error": repr(e)}
        return {"type": "fail", "error": "not acquired before the deadline"}

    def held(self, req):
        lk = self.locks.get(req["key"])
        if lk is None or lk.uuid.hex() != req["owner"]:
            return None
        return lk

    def release(self, req):
        lk = self.held(req)
        if lk is None:
            return {"type": "fail", "error": "not held by this client"}
        try:
            if lk.release():
                return {"type": "ok"}
        except Exception as e:
            return {"type": "error", "error": repr(e)}
        return {"type": "fail", "error": "the key no longer holds this lock's uuid"}

    def renew(self, req):
        lk = self.held(req)
        if lk is None:
            return {"type": "fail", "error": "not held by this client"}
        try:
            replies = lk.refresh()
        except Exception as e:
            return {"type": "error", "error": repr(e)}
        # A lease that already expired comes back with a TTL of 0 or less.
        if replies and all(r.TTL > 0 for r in replies):
            return {"type": "ok"}
        return {"type": "fail", "error": "the lease had expired"}


if __name__ == "__main__":
    c = Client()
    serve({"init": c.init, "acquire": c.acquire, "release": c.release, "renew": c.renew})
