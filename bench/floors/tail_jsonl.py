"""Floor for tailing: an ``http.client`` loop over TLS (verified with the node's CA) that
fetches page after page, following the Link header, on one connection while the server
keeps it open, and writes each page's events as JSON lines.

    python bench/floors/tail_jsonl.py URL USER PAGE_SIZE [OUT CHECKPOINT]
        (password in NODECLI_PASSWORD, CA file in NODECLI_CACERT)

Without OUT the lines go to stdout. With OUT and CHECKPOINT it does what a durable tail
must: each page is appended to OUT and synced, then the position is written to
CHECKPOINT atomically (temporary file, sync, rename). Prints the number of events to
stderr.
"""

import base64
import http.client
import json
import os
import re
import ssl
import sys
from urllib.parse import urlsplit

url, user, page = sys.argv[1], sys.argv[2], int(sys.argv[3])
out_path, checkpoint = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)
parts = urlsplit(url)
context = ssl.create_default_context(cafile=os.environ["NODECLI_CACERT"])
conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=30, context=context)
auth = "Basic " + base64.b64encode(f"{user}:{os.environ['NODECLI_PASSWORD']}".encode()).decode()
path = f"/events?iteration_token=0&count={page}"
fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if out_path else None
n = 0
while True:
    conn.request("GET", path, headers={"Authorization": auth, "Accept": "application/json"})
    resp = conn.getresponse()
    events = json.loads(resp.read())
    text = "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n"
                   for e in events)
    n += len(events)
    m = re.search(r"<([^>]*)>", resp.getheader("Link") or "")
    if fd is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        os.write(fd, text.encode())
        os.fsync(fd)
        if m and checkpoint:
            tmp = checkpoint + ".tmp"
            with open(tmp, "w") as fh:
                fh.write(json.dumps({"next": m.group(1), "size": os.fstat(fd).st_size}))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, checkpoint)
            folder = os.open(os.path.dirname(os.path.abspath(checkpoint)), os.O_RDONLY)
            os.fsync(folder)
            os.close(folder)
    if len(events) < page or not m:
        break
    path = urlsplit(m.group(1))._replace(scheme="", netloc="").geturl()
print(n, file=sys.stderr)
