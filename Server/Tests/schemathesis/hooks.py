"""Schemathesis's positive-data check, made exact for POST /v1/prepare (loaded through SCHEMATHESIS_HOOKS).

Every operation: a request valid by the document is accepted (2xx), or refused for the token (401) or as
busy (503), as the stock `positive_data_acceptance` check says.

On /v1/prepare, a request valid by the document may still be refused for what no schema can say: that the body
is an image SharePipe reads (random bytes: 415 unsupportedFormat; an empty body: 400 emptyBody; a damaged or
too large image, or one past --job-timeout: 422, 413), that the service is one of this server's profiles (they
come from --profiles too: 400 unknownService), or that min_quality is at most quality (400 invalidOptions
naming min_quality). The stock check, which takes any such 4xx as a failure, is left out (run_schemathesis.py:
--exclude-checks) and this one runs in its place on every operation: it takes those refusals on /v1/prepare,
each by its kind, and fails on any other, so a schema-valid query value the server refuses is still found.
"""

import json

import schemathesis

# status -> the error kinds a schema-valid request may be refused with, and why (see the module's text).
EXPLAINED_REFUSALS = {
    400: {"unknownService", "emptyBody", "invalidOptions"},
    413: {"tooLarge"},
    415: {"unsupportedFormat"},
    422: {"corrupt", "cannotMeetLimit", "timedOut"},
}


@schemathesis.check
def schema_valid_requests_are_accepted(ctx, response, case):
    if case.meta is None:
        return None
    if not case.meta.generation.mode.is_positive:
        return None
    status = response.status_code
    if status < 400 or status in (401, 503) or status >= 500:
        return None  # accepted; the token; busy; server errors are not_a_server_error's
    try:
        error = json.loads(response.content)["error"]
        kind, message = error["kind"], error["message"]
    except (ValueError, KeyError, TypeError):
        raise AssertionError("schema-valid request refused with %d and no JSON error" % status)
    explained = case.operation.path == "/v1/prepare" and kind in EXPLAINED_REFUSALS.get(status, set())
    if kind == "invalidOptions" and "min_quality" not in message:
        explained = False
    if not explained:
        raise AssertionError("schema-valid request refused: %d %s: %s" % (status, kind, message))
    return None
