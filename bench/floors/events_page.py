"""Floor for one events page: the least a Python process does to fetch 100 events over
HTTPS and print them as JSON. One ``http.client`` GET over TLS (verified with the node's
CA) with HTTP Basic, ``json.loads`` of the body, ``json.dumps`` (indented, as ``-o json``
prints) to stdout.

    python bench/floors/events_page.py URL USER COUNT  (password in NODECLI_PASSWORD,
                                                         CA file in NODECLI_CACERT)
"""

import base64
import http.client
import json
import os
import ssl
import sys
from urllib.parse import urlsplit

url, user, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
parts = urlsplit(url)
context = ssl.create_default_context(cafile=os.environ["NODECLI_CACERT"])
conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=30, context=context)
auth = base64.b64encode(f"{user}:{os.environ['NODECLI_PASSWORD']}".encode()).decode()
conn.request("GET", f"/events?iteration_token=0&count={count}",
             headers={"Authorization": "Basic " + auth, "Accept": "application/json"})
resp = conn.getresponse()
events = json.loads(resp.read())
if resp.status != 200 or not isinstance(events, list):
    sys.exit(f"unexpected answer {resp.status}")
sys.stdout.write(json.dumps({"events": events, "next_iteration_token": None}, indent=2,
                            ensure_ascii=False) + "\n")
