"""Node bearer tokens: the wire format (wire), RSA key pairs (keys), inspection
and verification (inspection), who may issue one (issuing) and where a running
command gets its token (source)."""
