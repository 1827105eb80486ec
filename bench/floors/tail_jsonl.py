"""Floor for tailing: a keep-alive ``http.client`` loop that fetches page after page
(following the Link header) and writes each page's events as JSON lines.

    python bench/floors/tail_jsonl.py URL USER PAGE_SIZE   (password in NODECLI_PASSWORD)

Prints the number of events to stderr.
"""

import base64
import http.client
import json
import os
import re
import sys
from urllib.parse import urlsplit

url, user, page = sys.argv[1], sys.argv[2], int(sys.argv[3])
parts = urlsplit(url)
conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
auth = "Basic " + base64.b64encode(f"{user}:{os.environ['NODECLI_PASSWORD']}".encode()).decode()
path = f"/events?iteration_token=0&count={page}"
out = sys.stdout
n = 0
while True:
    conn.request("GET", path, headers={"Authorization": auth, "Accept": "application/json"})
    resp = conn.getresponse()
    events = json.loads(resp.read())
    out.write("".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n"
                      for e in events))
    out.flush()
    n += len(events)
    m = re.search(r"<([^>]*)>", resp.getheader("Link") or "")
    if len(events) < page or not m:
        break
    path = urlsplit(m.group(1))._replace(scheme="", netloc="").geturl()
print(n, file=sys.stderr)
