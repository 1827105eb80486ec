"""Yardstick for one events page: the request of floors/events_page.py written with httpx2
(the library nodecli uses) alone. The gap between nodecli and this is nodecli's own; the
gap between this and the http.client floor is the library's (mostly its import).

    python bench/floors/events_page_httpx2.py URL USER COUNT  (password in NODECLI_PASSWORD,
                                                               CA file in NODECLI_CACERT)
"""

import json
import os
import ssl
import sys

import httpx2

url, user, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
context = ssl.create_default_context(cafile=os.environ["NODECLI_CACERT"])
with httpx2.Client(base_url=url, verify=context, trust_env=False, timeout=30,
                   auth=(user, os.environ["NODECLI_PASSWORD"])) as client:
    resp = client.get(f"/events?iteration_token=0&count={count}",
                      headers={"Accept": "application/json"})
events = json.loads(resp.content)
if resp.status_code != 200 or not isinstance(events, list):
    sys.exit(f"unexpected answer {resp.status_code}")
sys.stdout.write(json.dumps({"events": events, "next_iteration_token": None}, indent=2,
                            ensure_ascii=False) + "\n")
