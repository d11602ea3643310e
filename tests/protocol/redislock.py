#!/usr/bin/env python3
"""Reference lock client for locktest's process protocol (docs/protocol.md).

The single-Redis lock, standard library only: SET key owner NX PX ttl to
acquire, a Lua compare-and-delete to release, a Lua compare-and-PEXPIRE to
renew. With --fenced, the acquire script also takes the next fencing token
from INCR in the same atomic step. It talks RESP to Redis over a socket.

    locktest run --impl exec --exec-servers redis-single \\
        --exec-cmd 'python3 tests/protocol/redislock.py --fenced'

One JSON request per line on stdin, one reply per line on stdout; debug
lines go to stderr (the worker's log). It exits when stdin closes.
"""

import json
import random
import socket
import sys
import time

# If the key is ours already, an earlier try whose reply was lost did set
# it: we hold the lock.
ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] == '1' then return redis.call('INCR', KEYS[2]) end
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if ARGV[3] == '1' then return tonumber(redis.call('GET', KEYS[2])) end
  return 1
end
return 0"""

# Only the owner may delete: a client whose lease expired must not delete
# the next holder's lock.
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0"""

RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class RedisError(Exception):
    """The server answered with an error reply."""


class Redis:
    """A minimal RESP client. Any failure drops the connection: a reply
    that may still be in flight must never be read as the next one's."""

    def __init__(self, addr, timeout):
        host, port = addr.rsplit(":", 1)
        self.addr, self.timeout = (host, int(port)), timeout
        self.sock = self.rf = None

    def call(self, *args):
        try:
            if self.sock is None:
                self.sock = socket.create_connection(self.addr, self.timeout)
                self.sock.settimeout(self.timeout)
                self.rf = self.sock.makefile("rb")
            parts = [b"*%d\r\n" % len(args)]
            for a in args:
                b = a if isinstance(a, bytes) else str(a).encode()
                parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
            self.sock.sendall(b"".join(parts))
            return self.read()
        except (OSError, ValueError, RedisError):
            self.close()
            raise

    def read(self):
        line = self.rf.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed mid-reply")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.rf.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError("unexpected RESP reply %r" % line)

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = self.rf = None


class RedisLock:
    """Handles one request at a time and returns the reply."""

    def __init__(self, fenced):
        self.fenced = fenced
        self.seq = 0

    def handle(self, req):
        kind = req["type"]
        if kind == "init":
            return self.init(req)
        if kind == "acquire":
            return self.acquire(req)
        if kind == "release":
            return self.release(req)
        if kind == "renew":
            return self.renew(req)
        return {"type": "fail", "error": "unknown request type %r" % kind}

    def init(self, req):
        self.client = req["client"]
        self.redis = Redis(req["nodes"][0], req["io_timeout_ms"] / 1000)
        self.retry_min = req["retry_min_ms"] / 1000
        self.retry_jitter = req["retry_jitter_ms"] / 1000
        self.rng = random.Random(req["seed"] * 1000003 + self.client)
        log("c%d: redislock.py on %s, fenced=%s" % (self.client, req["nodes"][0], self.fenced))
        return {"type": "ok"}

    def acquire(self, req):
        start = time.monotonic()
        deadline = start + req["timeout_ms"] / 1000
        ttl = req["ttl_ms"]
        self.seq += 1
        owner = "c%d-%d-%08x" % (self.client, self.seq, self.rng.getrandbits(32))
        unknown, cmds = None, 0
        while True:
            cmds += 1
            try:
                n = self.take(req, owner)
                if n:
                    validity = ttl - int((time.monotonic() - start) * 1000)
                    return {"type": "ok", "owner": owner, "token": n if self.fenced else 0,
                            "validity_ms": max(validity, 0), "cmds": cmds}
            except (OSError, ValueError, RedisError) as e:
                unknown = e  # that try may have set the key
                log("c%d: acquire %s: %r" % (self.client, req["key"], e))
            sleep = self.retry_min + self.rng.random() * self.retry_jitter
            if time.monotonic() + sleep >= deadline:
                break
            time.sleep(sleep)
        if unknown is not None:
            return {"type": "error", "error": "deadline passed after a try of unknown outcome: %r" % unknown, "cmds": cmds}
        return {"type": "fail", "error": "not acquired before the deadline", "cmds": cmds}

    def take(self, req, owner):
        """One try at the lock: the fencing token (or 1) when granted, 0
        when another holds it. Raises on an error or timeout."""
        return self.redis.call("EVAL", ACQUIRE, 2, req["key"], req["key"] + ":token",
                               owner, req["ttl_ms"], "1" if self.fenced else "0")

    def owner_script(self, script, req, *args):
        try:
            n = self.redis.call("EVAL", script, 1, req["key"], req["owner"], *args)
        except (OSError, ValueError, RedisError) as e:
            return {"type": "error", "error": repr(e), "cmds": 1}
        if n:
            return {"type": "ok", "cmds": 1}
        return {"type": "fail", "error": "not held: released or expired", "cmds": 1}

    def release(self, req):
        return self.owner_script(RELEASE, req)

    def renew(self, req):
        return self.owner_script(RENEW, req, req["ttl_ms"])


def checkpoint(req, point):
    """Announces that handling req has reached point, and waits until
    locktest says to go on: a fault may hold the client here, between two
    of its round trips (locktest run --exec-checkpoints POINT)."""
    sys.stdout.write(json.dumps({"type": "checkpoint", "point": point, "in_reply_to": req["id"]}) + "\n")
    sys.stdout.flush()
    ack = json.loads(sys.stdin.readline() or "{}")
    if ack.get("type") != "continue" or ack.get("in_reply_to") != req["id"]:
        sys.exit("checkpoint %s of request %d: expected continue, got %r" % (point, req["id"], ack))


def serve(handle):
    """Answers requests until stdin closes."""
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        req = json.loads(line)
        reply = handle(req)
        reply["in_reply_to"] = req["id"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve(RedisLock("--fenced" in sys.argv[1:]).handle)
