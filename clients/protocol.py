"""The request loop the Python library clients share (docs/protocol.md).

One JSON request per line on stdin, one reply per line on stdout, flushed;
debug lines go to stderr, the worker's log. Returns when stdin closes.
"""

import json
import sys


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def serve(handlers):
    """Answers each request with handlers[type](request), which returns the
    reply without in_reply_to."""
    for line in sys.stdin:
        req = json.loads(line)
        handle = handlers.get(req["type"])
        if handle is None:
            reply = {"type": "fail", "error": "unknown request type %r" % req["type"]}
        else:
            reply = handle(req)
        reply["in_reply_to"] = req["id"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
