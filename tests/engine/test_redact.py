"""`redact` (engine/redaction.py), fuzzed: every secret shape, embedded in random text, is masked;
masking is idempotent; ordinary words that look a little like credentials stay as they are.

The shapes are those the issue names (an `sk-…` API key, `Bearer …`, URL userinfo, a JSON
`"api_key": "…"`) plus the header and field forms a server's error body echoes."""

from __future__ import annotations

import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from akh_tui.engine.redaction import MASK, redact, redact_obj, register_secret, registered_in

FUZZ = settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_KEY_CHARS = string.ascii_letters + string.digits
_PW_CHARS = string.ascii_letters + string.digits + "!$%^*()-_.~+=@:"


@st.composite
def secret_shape(draw) -> tuple[str, str]:
    """(text holding a secret, the secret's value): each shape the issue names, in its spellings."""
    kind = draw(st.sampled_from(["sk", "bearer", "userinfo", "json", "header", "basic", "assign"]))
    body = draw(st.text(_KEY_CHARS, min_size=20, max_size=48))
    if kind == "sk":
        prefix = draw(st.sampled_from(["sk-", "sk-proj-", "sk-ant-api03-", "pk-", "rk-"]))
        value = prefix + body
        return value, value
    if kind == "bearer":
        word = draw(st.sampled_from(["Bearer", "bearer", "BEARER"]))
        tok = body + draw(st.sampled_from(["", ".", "-x.y_z", "=="]))
        return f"{word} {tok}", tok
    if kind == "userinfo":
        user = draw(st.text(string.ascii_lowercase, min_size=1, max_size=8))
        pw = draw(st.text(_PW_CHARS, min_size=6, max_size=24)).replace("/", "")
        scheme = draw(st.sampled_from(["http", "https", "postgres", "redis"]))
        return f"{scheme}://{user}:{pw}{body[:4]}@db.example.org:5432/x", f"{pw}{body[:4]}"
    if kind == "json":
        name = draw(st.sampled_from(["api_key", "apiKey", "OPENAI_API_KEY", "password", "client_secret",
                                     "access_token", "token"]))
        sep = draw(st.sampled_from([": ", ":", " : "]))
        return f'"{name}"{sep}"{body}"', body
    if kind == "header":
        name = draw(st.sampled_from(["Authorization", "authorization", "Proxy-Authorization", "X-Api-Key",
                                     "x-api-key", "Cookie"]))
        scheme = draw(st.sampled_from(["", "Bearer ", "Basic ", "Token "]))
        return f"{name}: {scheme}{body}", body
    if kind == "basic":
        import base64

        tok = base64.b64encode(f"user:{body}".encode()).decode()
        return f"Basic {tok}", tok
    name = draw(st.sampled_from(["api_key", "password", "secret", "api-key"]))
    return f"{name}={body}", body


# Random prose around a secret: words, punctuation, JSON-ish brackets, new lines.
filler = st.text(string.ascii_letters + string.digits + " .,;:(){}[]\n\t'\"", max_size=60)


@FUZZ
@given(before=filler, shape=secret_shape(), after=filler)
def test_every_secret_shape_in_random_text_is_masked(before: str, shape: tuple[str, str], after: str) -> None:
    text, value = shape
    # a separator keeps the shape's own boundary (a key glued to a word is another word)
    got = redact(f"{before} {text} {after}")
    assert got.count(value) <= f"{before} {after}".count(value), got  # the filler may spell it by chance
    assert MASK in got


@FUZZ
@given(text=st.text(max_size=200) | st.builds(lambda a, s, b: f"{a} {s[0]} {b}", filler, secret_shape(), filler))
def test_redact_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@FUZZ
@given(shape=secret_shape())
def test_redact_obj_masks_keys_and_values_and_keeps_the_json_valid(shape: tuple[str, str]) -> None:
    text, value = shape
    obj = {"error": {"message": f"echo: {text}", "list": [text, 3, None]}, text: True}
    got = redact_obj(obj)
    assert value not in json.dumps(got)
    assert json.loads(json.dumps(got)) == got


def test_ordinary_text_is_unmasked_and_comes_back_as_the_same_object() -> None:
    for text in ("the Basic idea", "token bucket", "a bearer bond", "tokens: 42", "max_tokens=400",
                 "the secret is out", "pwd: /home/user", "sk-learn is a library", "risk-assessment-framework",
                 "http://example.org/a@b", "mail me: ann@example.org", "Cycle 12: kg_query(dog) [score=0.71]",
                 "password reset", "Authorization required"):
        assert redact(text) is text, text
    record = {"cycle": 3, "act": {"output": "dog is-a mammal", "tokens": 12}, "goals": ["Find mammals"]}
    assert redact_obj(record) is record


def test_a_registered_secret_is_masked_whatever_its_shape() -> None:
    value = 'pl41n"w0rd\\x'  # no credential shape at all; a quote and a backslash, as JSON escapes them
    assert redact(f"here {value} there") == f"here {value} there"
    register_secret(value)
    assert redact(f"here {value} there") == f"here {MASK} there"
    encoded = json.dumps({"output": f"here {value}"}, ensure_ascii=False)
    assert registered_in(encoded)  # the writers' check finds it in the encoded record too
    assert not registered_in(json.dumps({"output": "nothing here"}))
    register_secret("short")  # too short to mask by value: ordinary words would go
    assert redact("a short note") == "a short note"
