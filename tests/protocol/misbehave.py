#!/usr/bin/env python3
"""A lock client that breaks the protocol on purpose, for locktest's tests.

    misbehave.py MODE [N]

It is redislock.py until its N-th request after init (default 3), then:

    garbage      writes a line that is not JSON
    crash        exits with status 3 without replying
    hang         never replies (and keeps running)
    unsolicited  replies to a request it was not asked
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redislock  # noqa: E402


def main():
    mode = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    lock = redislock.RedisLock(fenced=False)
    count = 0

    def handle(req):
        nonlocal count
        if req["type"] != "init":
            count += 1
        if count < n:
            return lock.handle(req)
        redislock.log("misbehave.py: %s at request %d" % (mode, req["id"]))
        if mode == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        elif mode == "crash":
            sys.exit(3)
        elif mode == "hang":
            while True:
                time.sleep(3600)
        elif mode == "unsolicited":
            reply = lock.handle(req)
            reply["in_reply_to"] = req["id"] + 1000
            sys.stdout.write(redislock.json.dumps(reply) + "\n")
            sys.stdout.flush()
        # Whatever the mode, never answer this request properly.
        while True:
            time.sleep(3600)

    redislock.serve(handle)


if __name__ == "__main__":
    main()
