"""The bearer token check every face with a token shares (the service, the run UI)."""

from __future__ import annotations

import hmac


def bearer_matches(authorization: str, token: str | None) -> bool:
    """Whether an Authorization header carries this bearer token (compared in constant time); the scheme's name in
    any case, as HTTP's authentication schemes are (RFC 9110, 11.1)."""
    scheme, _, credentials = authorization.partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(credentials.encode(), token.encode())
