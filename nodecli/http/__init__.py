"""The one HTTP client (client) with its errors and retries (errors), checks around
a request (checks), deadlines (deadline), Link headers (links) and proxies
(proxies)."""
