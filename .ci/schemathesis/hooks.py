"""Schemathesis hooks of the contract check (`.ci/contract`).

A `cursor` is an opaque position signed with the server's secret and bound to its list and
filters (docs/api-behaviour.md: a forged cursor is a 400). No generator can produce a valid one, so a
generated cursor in a case meant to be valid would always, and rightly, be refused. Those
cases drop the cursor; real cursors are exercised by the end-to-end tests, which page through
every list. Cases meant to be invalid keep theirs: a malformed cursor must still be a 400.
The same goes for a tus chunk's `Upload-Checksum` (a mismatch is a 460).

The media API needs a plan with `mediaApi`, which the developer API's demo organization lacks:
its routes get the key of a `pro` organization (`XF_CONTRACT_MEDIA_KEY`, made by
`.ci/contract`) in `X-API-Key`, the header the media spec names first (replacing whatever a
generated case put there: the check of ignored authentication removes both keys itself).
"""

import os

import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode

# tus chunks are raw bytes.
schemathesis.openapi.media_type("application/offset+octet-stream", st.binary(max_size=4096))

MEDIA_PREFIXES = ("/media", "/channels", "/video/upload")


@schemathesis.hook
def map_case(context, case):
    media_key = os.environ.get("XF_CONTRACT_MEDIA_KEY")
    if media_key and case.path.startswith(MEDIA_PREFIXES):
        headers = case.headers if case.headers is not None else {}
        headers["X-API-Key"] = media_key
        case.headers = headers
    positive = case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE
    query = case.query
    if query and "cursor" in query and positive:
        del query["cursor"]
    # Likewise a tus chunk's checksum: no generator makes the SHA-1 of the bytes it makes.
    if case.headers and "Upload-Checksum" in case.headers and positive:
        del case.headers["Upload-Checksum"]
    # A valid creation declares at least the bytes it carries, and no more than the server
    # takes (its Tus-Max-Size, 4 GiB by default): generated lengths are brought within that.
    if positive and case.operation.label == "POST /media/uploads" and case.headers:
        length = case.headers.get("Upload-Length")
        if length is not None and length.isdigit():
            carried = len(case.body) if isinstance(case.body, (bytes, bytearray)) else 0
            case.headers["Upload-Length"] = str(max(carried, min(int(length), 1 << 30)))
    return case
