#!/usr/bin/env python3
"""Locks broken the ways real lock code breaks, for testing what locktest's
search reports about locks it was not built for.

    zoo.py MODE           serve the protocol as lock MODE
    zoo.py --flags MODE   the explore flags MODE needs (FLAGS)

Each mode is redislock.py (the correct unfenced lock: SET NX PX, an owner-
checked release and renewal) but for the one thing its docstring in MODES
says, with the class `locktest explore` should report (checker/lease.go):

    no fault needed   it loses updates in a run with no fault
    inside the lease  a lease still valid was granted again: a bug of the lock
    beyond the lease  only a fault that outlasts the lease breaks it: what every
                      unfenced lease lock allows; fencing is the cure
    none              no acknowledged update is lost (the resource refuses a
                      stale holder's writes), whatever the mutex check says

Some modes need flags (FLAGS below): their checkpoints (docs/protocol.md,
where a strike stops the client between two round trips) or the renewing
workload. scripts/explore-zoo measures explore on every mode.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redislock  # noqa: E402
from redislock import RedisError  # noqa: E402

ERRORS = (OSError, ValueError, RedisError)


MODES = {}  # name -> function that makes a RedisLock into that mode


def mode(fn):
    MODES[fn.__name__.strip("_").replace("_", "-")] = fn
    return fn


# Flags each mode needs for explore to reach its bug: its checkpoints, or
# counter-renew for a bug in renewal (only that workload renews).
FLAGS = {
    "token-after": ["--exec-checkpoints", "after-set"],
    "get-del": ["--exec-checkpoints", "before-del"],
    "setnx-expire": ["--exec-checkpoints", "after-setnx"],
    "blind-renew": ["--workload", "counter-renew"],
    "checked": ["--workload", "counter-renew"],
}


@mode
def open_(z):
    """Acquire answers ok without taking anything: every client is let in.
    The lock whose SET was never wired up, or whose result is not checked
    (`redis.set(key, v, nx=True, px=ttl)` called and its None ignored).
    Expected: no fault needed."""
    def acquire(req):
        z.seq += 1
        return {"type": "ok", "owner": "c%d-%d" % (z.client, z.seq), "token": 0,
                "validity_ms": req["ttl_ms"], "cmds": 0}
    z.acquire = acquire


@mode
def del_release(z):
    """Release is a plain DEL that does not check the owner: a client whose
    lease ran out deletes the next holder's key, and a third client takes
    the lock while the second's lease still runs. The lock of countless
    tutorials (`SET NX PX` ... `DEL`); docs/anomalies.md row 4 as a design.
    Expected: inside the lease."""
    def release(req):
        try:
            z.redis.call("DEL", req["key"])
        except ERRORS as e:
            return {"type": "error", "error": repr(e), "cmds": 1}
        return {"type": "ok", "cmds": 1}
    z.release = release


@mode
def token_after(z):
    """A fenced lock that takes the lock with SET NX PX, then fetches its
    fencing token with a separate INCR, announcing the checkpoint after-set
    between the two: a client paused there past its lease gets a token newer
    than the holder's that took the lock meanwhile, so the resource takes
    the stale client's writes and refuses the rightful holder's. Fencing
    bolted onto an existing lock as a second command.
    Expected: none. The mutex check finds it inside the lease (two holders,
    the stale one with the newer token), but no acknowledged update is lost:
    the resource refuses the rightful holder's writes instead, and explore
    hunts lost updates (with --exec-checkpoints after-set); kill-node rolls
    its token counter back as for fenced."""
    def take_then_token(req, owner):
        key = req["key"]
        # The unfenced acquire script: SET NX PX (or the key is ours already).
        if not z.redis.call("EVAL", redislock.ACQUIRE, 2, key, key + ":token", owner, req["ttl_ms"], "0"):
            return 0
        redislock.checkpoint(req, "after-set")
        return z.redis.call("INCR", key + ":token")
    z.take = take_then_token
    z.fenced = True  # the token is the acquire's reply


@mode
def get_del(z):
    """Release checks the owner with GET, then deletes with DEL: two round
    trips, not one script. A client paused between them (checkpoint
    before-del) past its lease deletes the key another client took
    meanwhile, and a third takes the lock inside the second's lease. The
    release written as `if r.get(key) == me: r.delete(key)`, as in many
    Redis lock snippets and wrappers without Lua.
    Expected: inside the lease (with --exec-checkpoints before-del)."""
    def release(req):
        try:
            if z.redis.call("GET", req["key"]) != req["owner"].encode():
                return {"type": "fail", "error": "not held: released or expired", "cmds": 1}
            redislock.checkpoint(req, "before-del")
            z.redis.call("DEL", req["key"])
        except ERRORS as e:
            return {"type": "error", "error": repr(e), "cmds": 2}
        return {"type": "ok", "cmds": 2}
    z.release = release


@mode
def blind_renew(z):
    """Renewal is a bare PEXPIRE that does not check the owner: a client
    whose lease ran out (paused in its critical section) renews the key of
    the client that took the lock meanwhile, is told its lease is extended,
    and writes. The watchdog or `extend()` written as `r.pexpire(key, ttl)`.
    Expected: inside the lease (with --workload counter-renew: the renewal
    the workload makes before each write)."""
    def renew(req):
        try:
            n = z.redis.call("PEXPIRE", req["key"], req["ttl_ms"])
        except ERRORS as e:
            return {"type": "error", "error": repr(e), "cmds": 1}
        if n:
            return {"type": "ok", "cmds": 1}
        return {"type": "fail", "error": "no such key", "cmds": 1}
    z.renew = renew


@mode
def plain_retry(z):
    """After a SET NX that failed with an error (a timeout: it may have
    landed), the client retries with a plain SET PX, without NX, "to make
    sure the key is ours": that overwrites the key of whoever holds the
    lock. A retry path meant to be idempotent that drops the condition.
    Expected: inside the lease (under a link fault: latency, partition,
    reset)."""
    acquire = z.acquire

    def acquire_noting_errors(req):
        z.errored = False
        return acquire(req)

    def take(req, owner):
        cond = () if z.errored else ("NX",)
        try:
            return 1 if z.redis.call("SET", req["key"], owner, *cond, "PX", req["ttl_ms"]) else 0
        except ERRORS:
            z.errored = True
            raise
    z.acquire, z.take = acquire_noting_errors, take


@mode
def timeout_ok(z):
    """A SET NX that timed out is taken as granted ("the server is slow,
    the SET will land"): `except TimeoutError: return True`. When the SET
    never landed, or landed after another client's, two clients hold the
    lock. Expected: inside the lease (under a link fault that delays or
    drops the SET)."""
    def take(req, owner):
        try:
            return 1 if z.redis.call("SET", req["key"], owner, "NX", "PX", req["ttl_ms"]) else 0
        except TimeoutError:
            return 1
    z.take = take


@mode
def setnx_expire(z):
    """SETNX, then PEXPIRE in a second round trip (checkpoint after-setnx
    between them), as Redis locks were written before SET took NX and PX
    together. A key without a TTL is taken for the orphan of a client that
    crashed between the two commands, and deleted: but a live client
    between its SETNX and its PEXPIRE leaves exactly such a key, so another
    deletes it and takes the lock. Without the deletion a crash there would
    leave the lock held for ever (liveness); with it, it is unsafe.
    Expected: no fault needed (the window is one round trip wide, and
    clients contending for the lock fall into it with no fault; a strike at
    after-setnx of any length makes it inside the lease)."""
    def take(req, owner):
        key = req["key"]
        if z.redis.call("SETNX", key, owner):
            redislock.checkpoint(req, "after-setnx")
            z.redis.call("PEXPIRE", key, req["ttl_ms"])
            return 1
        if z.redis.call("PTTL", key) == -1:
            z.redis.call("DEL", key)
        return 0
    z.take = take


@mode
def checked(z):
    """Control: the correct unfenced lock that honours its validity as
    Redlock's clients are told to. An acquire whose lease is already (all
    but) over when SET's reply arrives gives the key back and answers
    error; a renewal, which the workload makes right before each write, is
    refused once the client's own clock says the lease ran out, and is
    otherwise owner-checked. What is left is the gap between the check and
    the write, which no unfenced lease closes.
    Expected: beyond the lease only (with --workload counter-renew); but
    kill-node, which restarts the one Redis empty, re-grants a key inside
    its lease (docs/anomalies.md row 9), as it does to every lock here."""
    acquire, renew = z.acquire, z.renew
    leases = {}  # owner -> when its lease ends, on this client's clock

    def drift(ttl):
        return (ttl * 0.01 + 2) / 1000  # Redlock's allowance for clock drift

    def checked_acquire(req):
        start = time.monotonic()
        reply = acquire(req)
        if reply["type"] != "ok":
            return reply
        end = start + req["ttl_ms"] / 1000 - drift(req["ttl_ms"])
        if time.monotonic() >= end:
            z.release({"key": req["key"], "owner": reply["owner"]})
            return {"type": "error", "error": "granted, but the lease was over when the reply came",
                    "cmds": reply["cmds"] + 1}
        leases.clear()
        leases[reply["owner"]] = end
        return reply

    def checked_renew(req):
        start = time.monotonic()
        if start >= leases.get(req["owner"], 0):
            return {"type": "fail", "error": "the lease ran out before the renewal", "cmds": 0}
        reply = renew(req)
        if reply["type"] == "ok":
            leases[req["owner"]] = start + req["ttl_ms"] / 1000 - drift(req["ttl_ms"])
        return reply
    z.acquire, z.renew = checked_acquire, checked_renew


@mode
def fenced(z):
    """Control: redislock.py --fenced, the token taken by the same script
    that takes the lock. Expected: none (the resource refuses a stale
    holder's writes; two clients may still believe they hold the lock); but
    kill-node, which restarts the one Redis empty, rolls the token counter
    back, and a token handed out twice lets two holders write
    (docs/anomalies.md row 19)."""
    z.fenced = True


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--flags" and sys.argv[2] in MODES:
        print(" ".join(FLAGS.get(sys.argv[2], [])))  # for scripts/explore-zoo
        sys.exit()
    if len(sys.argv) != 2 or sys.argv[1] not in MODES:
        sys.exit("usage: zoo.py " + "|".join(MODES) + "\n       zoo.py --flags MODE")
    z = redislock.RedisLock(fenced=False)
    MODES[sys.argv[1]](z)
    redislock.serve(z.handle)
