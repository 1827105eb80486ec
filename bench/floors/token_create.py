"""Floor for ``token create`` with an existing key: the least a Python process does to
issue a node bearer token after checking the issuer's password.

Reads the node user's PHC scrypt hash from config.toml (tomllib), checks the password
(NODECLI_PASSWORD) with ``hashlib.scrypt`` at the parameters stored in the hash, loads the
PEM private key (RSA validation skipped: nodecli validates a key once, on first use, and
the benchmark measures later uses), signs the payload once with RSA PKCS#1 v1.5 SHA-512,
and prints the zlib + base64 envelope.

    python bench/floors/token_create.py HOME USER KEY ACCESS_KEY USER_ID
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import tomllib
import zlib
from datetime import UTC, datetime, timedelta

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

home, user, key_path, access_key, user_id = sys.argv[1:6]
with open(os.path.join(home, "config.toml"), "rb") as f:
    phc = tomllib.load(f)["users"][user]["password"]
_, _, params, salt, digest = phc.split("$")
p = dict(kv.split("=") for kv in params.split(","))
n, r, par = 2 ** int(p["ln"]), int(p["r"]), int(p["p"])
unb64 = lambda s: base64.b64decode(s + "=" * (-len(s) % 4))  # noqa: E731
expected = unb64(digest)
actual = hashlib.scrypt(os.environ["NODECLI_PASSWORD"].encode(), salt=unb64(salt), n=n, r=r,
                        p=par, maxmem=128 * r * n * 2 + 1024 * 1024, dklen=len(expected))
if not hmac.compare_digest(actual, expected):
    sys.exit("wrong password")
with open(key_path, "rb") as f:
    key = serialization.load_pem_private_key(f.read(), None,
                                             unsafe_skip_rsa_key_validation=True)
expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
payload = json.dumps({"user_id": user_id, "scope": f"node.{access_key}:admin:all",
                      "auth_type": "access_key", "expires_at": expires},
                     separators=(",", ":")).encode()
sig = base64.b64encode(key.sign(payload, padding.PKCS1v15(), hashes.SHA512()))
inner = payload + b"\n==SIGNATURE==\n" + b"\n".join(sig[i:i + 60]
                                                   for i in range(0, len(sig), 60)) + b"\n"
print(base64.b64encode(zlib.compress(inner)).decode())
