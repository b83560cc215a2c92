"""Schemathesis hooks of the contract check (`.ci/contract`).

A `cursor` is an opaque position signed with the server's secret and bound to its list and
filters (CONTRACT.md: a forged cursor is a 400). No generator can produce a valid one, so a
generated cursor in a case meant to be valid would always, and rightly, be refused. Those
cases drop the cursor; real cursors are exercised by the end-to-end tests, which page through
every list. Cases meant to be invalid keep theirs: a malformed cursor must still be a 400.
"""

import schemathesis
from schemathesis import GenerationMode


@schemathesis.hook
def map_case(context, case):
    query = case.query
    if query and "cursor" in query and case.meta is not None:
        if case.meta.generation.mode == GenerationMode.POSITIVE:
            del query["cursor"]
    return case
