"""The cost of the password hash alone: the least a Python process does to hash one
password the way ``nodecli user add`` does (``hashlib.scrypt`` at the parameters given,
a random 16-byte salt, a 32-byte digest, printed as a PHC string).

    python bench/floors/scrypt_hash.py LOG_N R P < password

bench/table.py runs it next to a bare ``python -c pass`` in the same rounds; the
difference of their medians is the hash time it takes out of both ``user add`` runs.
"""

import base64
import hashlib
import os
import sys

log_n, r, p = (int(arg) for arg in sys.argv[1:4])
password = sys.stdin.readline().rstrip("\n").encode("utf-8")
salt = os.urandom(16)
n = 1 << log_n
digest = hashlib.scrypt(password, salt=salt, n=n, r=r, p=p, maxmem=128 * r * n * 2 + 1024 * 1024,
                        dklen=32)
b64 = lambda raw: base64.b64encode(raw).decode("ascii").rstrip("=")  # noqa: E731
print(f"$scrypt$ln={log_n},r={r},p={p}${b64(salt)}${b64(digest)}")
