"""Schemathesis hooks of the contract check (`.ci/contract`).

A `cursor` is an opaque position signed with the server's secret and bound to its list and
filters (docs/api-behaviour.md: a forged cursor is a 400). No generator can produce a valid one, so a
generated cursor in a case meant to be valid would always, and rightly, be refused. Those
cases drop the cursor; real cursors are exercised by the end-to-end tests, which page through
every list. Cases meant to be invalid keep theirs: a malformed cursor must still be a 400.
The same goes for a tus chunk's `Upload-Checksum` (a mismatch is a 460).

A multipart form carries text and files, nothing else: a negative case that turns a text field
into a number (`0.0`) sends the text `0.0`, which is a valid value of that field. Schemathesis
means to forgive such cases by reading the form as sent, but cannot when the form also holds a
file (it validates its own `Binary` wrapper, and gives up); `filter_failure` reads the sent
form itself and drops an accepted-negative-data failure only when what reached the server is
valid by the schema, every part read as text (files as binary strings).

The media API needs a plan with `mediaApi`, which the developer API's demo organization lacks:
its routes get the key of a `pro` organization (`XF_CONTRACT_MEDIA_KEY`, made by
`.ci/contract`) in `X-API-Key`, the header the media spec names first (replacing whatever a
generated case put there: the check of ignored authentication removes both keys itself).
"""

import os
from email.parser import BytesParser
from email.policy import HTTP

import jsonschema_rs
import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core.failures import AcceptedNegativeData

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


def _multipart_as_sent(response):
    """The multipart form the server read: each part's name and its text, files as empty strings.

    `None` when the body is not a readable form, or a text field is repeated (then the server's
    own answer decides, and the failure stands).
    """
    content = response.request.body
    if isinstance(content, str):
        content = content.encode()
    if not isinstance(content, bytes):
        return None
    content_type = response.request.headers.get("Content-Type", "")
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + content)
    if not message.is_multipart():
        return None
    texts, files = {}, {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name is None:
            return None
        if part.get_filename() is not None or "content-type" in part:
            files.setdefault(name, []).append("")
            continue
        if name in texts:
            return None
        payload = part.get_payload(decode=True) or b""
        texts[name] = payload.decode(errors="replace")
    return texts, files


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if not isinstance(failure, AcceptedNegativeData) or case.media_type != "multipart/form-data":
        return True
    meta = case.meta
    if meta is None or any(
        component.mode.is_negative for location, component in meta.components.items() if location.value != "body"
    ):
        return True
    sent = _multipart_as_sent(response)
    if sent is None:
        return True
    texts, files = sent
    try:
        schema = case.operation.definition.raw["requestBody"]["content"]["multipart/form-data"]["schema"]
        properties = schema.get("properties", {})
        instance = dict(texts)
        for name, parts in files.items():
            is_array = properties.get(name, {}).get("type") == "array"
            instance[name] = parts if is_array else parts[0]
        return not jsonschema_rs.validator_for(schema).is_valid(instance)
    except Exception:
        # A schema this reading cannot follow: the failure stands.
        return True
