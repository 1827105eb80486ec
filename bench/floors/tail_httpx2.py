"""Yardstick, not a floor: the tail loop of floors/tail_jsonl.py written with httpx2 (the
library nodecli uses) instead of ``http.client``. Shows how much of a request's cost is
the library's own, so the rest can be told apart as nodecli's.

    python bench/floors/tail_httpx2.py URL USER PAGE_SIZE
        (password in NODECLI_PASSWORD, CA file in NODECLI_CACERT)
"""

import json
import os
import re
import ssl
import sys

import httpx2

url, user, page = sys.argv[1], sys.argv[2], int(sys.argv[3])
context = ssl.create_default_context(cafile=os.environ["NODECLI_CACERT"])
client = httpx2.Client(base_url=url, verify=context, trust_env=False,
                       auth=(user, os.environ["NODECLI_PASSWORD"]))
path = f"/events?iteration_token=0&count={page}"
n = 0
while True:
    resp = client.get(path, headers={"Accept": "application/json"})
    events = json.loads(resp.content)
    sys.stdout.write("".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n"
                             for e in events))
    sys.stdout.flush()
    n += len(events)
    m = re.search(r"<([^>]*)>", resp.headers.get("Link") or "")
    if len(events) < page or not m:
        break
    path = m.group(1)
print(n, file=sys.stderr)
