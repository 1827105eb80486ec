"""Floor: nats-py alone publishing events to JetStream with pipelined acknowledgements.

    python bench/floors/nats_publish.py SERVER SUBJECT EVENTS.jsonl NODE BATCH

Each line of EVENTS.jsonl (``events tail -o jsonl``: the same bytes ``events ship``
sends) is published to SUBJECT with the headers the sink sets (``Nats-Msg-Id:
NODE:<id>``, ``Nodecli-Node``), BATCH messages at a time: publish the whole batch with
``publish_async``, then await every acknowledgement, as ``events ship`` must before its
checkpoint moves. Reading the file is the only other work: no node, no checkpoint.
"""

from __future__ import annotations

import asyncio
import json
import sys


async def main(server: str, subject: str, path: str, node: str, batch: int) -> None:
    import nats

    with open(path, "rb") as fh:
        lines = [line.rstrip(b"\n") for line in fh]
    nc = await nats.connect(server, allow_reconnect=False)
    js = nc.jetstream(publish_async_max_pending=1_000_000)
    for start in range(0, len(lines), batch):
        acks = [await js.publish_async(subject, line, headers={
            "Nats-Msg-Id": f"{node}:{json.loads(line)['id']}", "Nodecli-Node": node})
            for line in lines[start:start + batch]]
        for ack in await asyncio.gather(*acks):
            assert not ack.duplicate
    await nc.close()


if __name__ == "__main__":
    server, subject, path, node, batch = sys.argv[1:6]
    asyncio.run(main(server, subject, path, node, int(batch)))
