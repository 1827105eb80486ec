#!/bin/sh
# Golden bearer-token vectors, built with the DOCUMENTED MANUAL PROCEDURE (openssl +
# base64 + zlib), independently of nodecli's encoder. tests/test_tokens.py asserts
# that nodecli produces byte-identical tokens from the same key, payload and expiry,
# and that its decoder accepts both the 60-column and the 76-column signature forms.
#
# TEST ONLY: golden_key.pem is a throw-away 2048-bit key committed for these tests.
# It protects nothing; never register it on a node.
#
# Re-run from this folder (needs openssl, GNU coreutils base64 and python3):
#   sh make_golden.sh            (keeps the existing key; pass --new-key to replace it)
set -eu
cd "$(dirname "$0")"
if [ "${1:-}" = "--new-key" ] || [ ! -f golden_key.pem ]; then
    rm -f golden_key.pem
    (umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out golden_key.pem)
fi
chmod 600 golden_key.pem
openssl pkey -in golden_key.pem -pubout -out golden_key.pub

zlib_b64() {  # zlib at the default level, then standard base64 on one line
    python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))' \
        | base64 -w 0
}

make() {  # make NAME WRAP_COLUMNS : payload in NAME.json -> NAME.<cols>.token
    name=$1
    cols=$2
    # 1. the payload: compact JSON, no trailing newline (printf '%s')
    # 2. RSASSA-PKCS1-v1_5 with SHA-512 over the exact payload bytes
    openssl dgst -sha512 -sign golden_key.pem -out "$name.sig" "$name.json"
    # 3. payload + "\n==SIGNATURE==\n" + base64(signature) wrapped + "\n"
    {
        cat "$name.json"
        printf '\n==SIGNATURE==\n'
        base64 -w "$cols" "$name.sig"
    } > "$name.$cols.inner"
    # 4. zlib (default level), then base64 on one line
    zlib_b64 < "$name.$cols.inner" > "$name.$cols.token"
    printf '\n' >> "$name.$cols.token"
    rm -f "$name.$cols.inner"
}

printf '%s' '{"user_id":"alice","group_ids":["eng","staff"],"scope":"node.AK1a2B:admin:all","auth_type":"access_key","expires_at":"2031-01-01T00:00:00Z"}' > golden_groups.json
printf '%s' '{"user_id":"42","scope":"node.AK1a2B:user:all","auth_type":"access_key","expires_at":"2030-06-15T13:00:00Z"}' > golden_user.json
printf '%s' '{"user_id":"zoë ✓","scope":"node.ak-x:user:all","auth_type":"access_key","expires_at":"2031-01-01T00:00:00Z"}' > golden_utf8.json

for n in golden_groups golden_user golden_utf8; do
    make "$n" 60   # what nodecli (and the widely used client) writes
    make "$n" 76   # what the manual procedure with plain `base64` writes
    rm -f "$n.sig"
done
echo "golden vectors written"
