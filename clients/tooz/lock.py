#!/usr/bin/python3
"""OpenStack tooz's lock (Debian python3-tooz) behind locktest's protocol,
over the backend named by the first argument.

All lock logic is the library's: one tooz coordinator per client, started
with its heartbeat thread as OpenStack services start it (the heartbeat
keeps the coordinator's locks alive where the backend has leases), and
coordinator.get_lock(key) for each key. What a lock is depends on the
backend: a Redis key with a timeout (redis), an ephemeral znode (zookeeper),
python-etcd3's lock with a lease (etcd3, over gRPC),
an advisory lock of a session (postgresql), GET_LOCK of a session (mysql),
an item added with an expiry (memcached, which evicts when full).
Durations tooz takes in whole seconds are rounded up. Nothing is fenced;
tooz has no token. Renewal is the heartbeat's, not the caller's: renew
answers fail.
"""

import math
import os
import sys
import uuid

import tenacity
import tooz
import tooz.coordination

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from protocol import log, serve  # noqa: E402


def secs(ms):
    return max(1, math.ceil(ms / 1000))


def backend_url(backend, req):
    nodes, ttl, io = req["nodes"], secs(req["ttl_ms"]), secs(req["io_timeout_ms"])
    if backend == "redis":
        return "redis://%s?timeout=%d&lock_timeout=%d" % (nodes[0], io, ttl)
    if backend == "zookeeper":
        # The session timeout is the lock's TTL, as Kazoo's own Lock here.
        return "kazoo://%s?timeout=%d" % (",".join(nodes), ttl)
    if backend == "etcd3":
        return "etcd3://%s?timeout=%d&lock_timeout=%d" % (nodes[0], io, ttl)
    if backend == "postgresql":
        return "postgresql://locktest@%s/postgres" % nodes[0]
    if backend == "memcached":
        return "memcached://%s?timeout=%d&lock_timeout=%d" % (nodes[0], io, ttl)
    if backend == "mysql":
        return "mysql://locktest@%s/mysql" % nodes[0]
    raise ValueError("unknown tooz backend %r" % backend)


class Client:
    def __init__(self, backend):
        self.backend = backend

    def init(self, req):
        url = backend_url(self.backend, req)
        self.member = "c%d-%s" % (req["client"], uuid.uuid4().hex[:8])
        self.coord = tooz.coordination.get_coordinator(url, self.member.encode())
        self.coord.start(start_heart=True)
        self.locks = {}
        log("c%d: tooz on %s" % (req["client"], url))
        return {"type": "ok"}

    def acquire(self, req):
        lk = self.locks.get(req["key"])
        if lk is None:
            lk = self.locks[req["key"]] = self.coord.get_lock(req["key"].encode())
        try:
            if lk.acquire(blocking=req["timeout_ms"] / 1000):
                return {"type": "ok", "owner": "%s/%s" % (self.member, req["key"])}
        except tenacity.RetryError:
            # The SQL backends' blocking acquire ends in the retry loop's
            # error, not False, when its time runs out without the lock.
            return {"type": "fail", "error": "not acquired before the deadline (tenacity.RetryError)"}
        except Exception as e:  # the lock may have been taken; the library's own crash too
            return {"type": "error", "error": repr(e)}
        return {"type": "fail", "error": "not acquired before the deadline"}

    def release(self, req):
        lk = self.locks.get(req["key"])
        if lk is None:
            return {"type": "fail", "error": "not held by this client"}
        try:
            if lk.release():
                return {"type": "ok"}
        except Exception as e:
            return {"type": "error", "error": repr(e)}
        return {"type": "fail", "error": "not held"}

    def renew(self, req):
        return {"type": "fail", "error": "tooz renews by its coordinator's heartbeat, not per lock"}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        log("usage: lock.py BACKEND")
        sys.exit(2)
    c = Client(sys.argv[1])
    serve({"init": c.init, "acquire": c.acquire, "release": c.release, "renew": c.renew})
