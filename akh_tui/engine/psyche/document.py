"""Writing a psyche's values back into the TOML the user wrote (tomlkit), so their comments, key
order and layout survive an evolve-and-save cycle: only the values that changed are rewritten,
new keys go after the table's last key and before its trailing comments, new tables at the end.
"""

from __future__ import annotations

from typing import Any, Mapping

import tomlkit
from tomlkit.items import AoT, Comment, Null, Table, Whitespace

from .parts import DEFAULT_DATA, PATTERN_DEFAULTS, PATTERN_KEYS, SHADOW_KEYS


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _plain(v: Any) -> Any:
    return v.unwrap() if hasattr(v, "unwrap") else v


def _same(a: Any, b: Any) -> bool:
    # 1 and 1.0 are the same weight; rewriting one as the other would be a needless edit.
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def _body(container: Any) -> list:
    return container.value.body if isinstance(container, Table) else container.body


def _pop_tail(container: Any) -> list:
    """Detach the comments and blank lines that end ``container``'s text.

    In tomlkit they belong to the deepest last table, although they usually introduce
    whatever follows it in the file; anything appended after that table must go before
    them, or a "# Archetypes ..." comment ends up above a new shadow pattern.
    """
    if isinstance(container, AoT):
        return _pop_tail(container[-1]) if len(container) else []
    body = _body(container)
    end = len(body)
    while end > 0 and (body[end - 1][0] is None and isinstance(body[end - 1][1], Null)):
        end -= 1
    if end == 0:
        return []
    key, last = body[end - 1]
    if key is None and isinstance(last, (Whitespace, Comment)):
        start = end
        while start > 0 and body[start - 1][0] is None and isinstance(
            body[start - 1][1], (Whitespace, Comment, Null)
        ):
            start -= 1
        tail = [it for _, it in body[start:] if not isinstance(it, Null)]
        del body[start:]
        return tail
    if isinstance(last, Table):
        return _pop_tail(last)
    if isinstance(last, AoT) and len(last):
        return _pop_tail(last[-1])
    return []


def _push_tail(item: Any, tail: list) -> None:
    """Re-attach a tail detached by _pop_tail at the end of ``item``'s text."""
    if not tail:
        return
    while True:
        if isinstance(item, AoT):
            item = item[-1]
            continue
        body = _body(item)
        live = [it for k, it in body if not isinstance(it, Null)]
        if live and isinstance(live[-1], (Table, AoT)):
            item = live[-1]
            continue
        break
    _body(item).extend((None, it) for it in tail)


def _ends_with_blank_line(table: Table) -> bool:
    live = [it for _, it in table.value.body if not isinstance(it, Null)]
    return bool(live) and isinstance(live[-1], Whitespace) and "\n" in live[-1].s


def _blank_line_before(table: Table) -> None:
    # New headers get a blank line above them, like every header in a hand-written file.
    if "\n" not in table.trivia.indent:
        table.trivia.indent = "\n" + table.trivia.indent


def _add_key(table: Table, key: str, value: Any) -> None:
    """Add a plain key after the table's last key-value, before its trailing comments."""
    body = table.value.body
    if any(isinstance(it, (Table, AoT)) for _, it in body):
        # tomlkit itself puts a plain key above the sub-table headers, where it must be.
        item = tomlkit.item(value)
        item.trivia.trail = "\n\n"
        table.append(key, item)
        return
    keep = 0
    for n, (k, it) in enumerate(body):
        if k is not None:
            keep = n + 1
    if keep == 0:
        # No keys yet: leading comments describe the table, so the key goes after them.
        keep = len(body)
        while keep > 0 and isinstance(body[keep - 1][1], (Whitespace, Null)):
            keep -= 1
    tail = body[keep:]
    del body[keep:]
    table.append(key, value)
    body.extend(tail)


def _append_child(parent: Any, key: str, item: Any) -> None:
    """Append a table or array of tables at the end of ``parent``, keeping its tail last."""
    tail = _pop_tail(parent)
    parent.append(key, item)
    first = item[0] if isinstance(item, AoT) else item
    if isinstance(first, Table) and not first.is_super_table():
        _blank_line_before(first)
    _push_tail(item, tail)


def _sync_fields(target: Any, values: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """Bring ``target`` (a table) to ``values``; a missing key means its default, None absent."""
    for k, v in values.items():
        if k in target:
            if v is None:
                del target[k]
            elif not _same(_plain(target[k]), v):
                target[k] = v
        elif v is not None and not _same(v, defaults.get(k)):
            if isinstance(target, Table):
                _add_key(target, k, v)
            else:
                target[k] = v


def _new_section(values: Mapping[str, Any]) -> Table:
    t = tomlkit.table()
    for k, v in values.items():
        if v is not None:
            t.add(k, v)
    return t


def write_into(doc: tomlkit.TOMLDocument, wanted: Mapping[str, Any]) -> None:
    """Bring `doc` to the values `wanted` (a `Psyche.to_dict()`), changing only what differs."""
    for section in ("persona", "archetypes", "self_integration"):
        values = wanted[section]
        if section in doc:
            _sync_fields(doc[section], values, DEFAULT_DATA[section])
        elif values != DEFAULT_DATA[section]:
            _append_child(doc, section, _new_section(values))
    for key in SHADOW_KEYS:
        _sync_patterns(doc, key, wanted["shadow"][key])
    _sync_anticipate(doc, bool(wanted["shadow"].get("anticipate")))


def _sync_anticipate(doc: tomlkit.TOMLDocument, on: bool) -> None:
    """`[shadow] anticipate`: rewritten where the user wrote it, added only when turned on."""
    shadow: Any = doc.get("shadow")
    if shadow is not None and "anticipate" in shadow:
        if bool(shadow["anticipate"]) != on:
            shadow["anticipate"] = on
        return
    if not on:
        return
    if shadow is None:
        shadow = tomlkit.table()
        shadow.append("anticipate", True)
        _append_child(doc, "shadow", shadow)
    else:
        _add_key(shadow, "anticipate", True)


def _pattern_fields(p: Mapping[str, Any]) -> dict[str, Any]:
    return {k: p.get(k) for k in PATTERN_KEYS}


def _sync_patterns(doc: tomlkit.TOMLDocument, key: str, patterns: list[dict]) -> None:
    shadow: Any = doc.get("shadow")  # a tomlkit Table (or a proxy of one); tomlkit types it loosely
    current = shadow.get(key) if shadow is not None else None
    if current is None:
        if patterns == DEFAULT_DATA["shadow"][key]:
            return  # still implied by the missing key
        if patterns:
            value: Any = tomlkit.aot()
            for p in patterns:
                value.append(_new_section(_pattern_fields(p)))
        else:
            value = tomlkit.array()
        if shadow is None:
            # Filled before it is attached, so the document's trailing comments stay last.
            shadow = tomlkit.table(is_super_table=bool(patterns))
            shadow.append(key, value)
            _append_child(doc, "shadow", shadow)
        elif patterns:
            _append_child(shadow, key, value)
        else:
            _add_key(shadow, key, value)
        return

    if not patterns:
        if not isinstance(current, AoT) and not len(current):
            return  # already `key = []`: rewriting it would drop its comments
        # An explicit empty list: a missing key would bring the defaults back.
        tail = _pop_tail(current) if isinstance(current, AoT) else []
        live = [it for _, it in _body(shadow) if not isinstance(it, Null)]
        was_last = bool(live) and live[-1] is current
        del shadow[key]
        empty = tomlkit.array()
        _add_key(shadow, key, empty)
        if tail and was_last and any(isinstance(it, (Table, AoT)) for _, it in _body(shadow)):
            _push_tail(shadow, tail)
        elif tail:
            # The comments introduced what followed the array; keep them right after the
            # key that replaced it (a trail, because body indices are tomlkit's own).
            item = shadow.value.item(key) if isinstance(shadow, Table) else shadow.item(key)
            item.trivia.trail = "\n" + "".join(it.as_string() for it in tail)  # type: ignore[union-attr]
        return

    elements = list(current)
    used: set[int] = set()
    ordered: list[Any] = []
    for p in patterns:
        found = None
        for n, el in enumerate(elements):
            if n not in used and _plain(el.get("name")) == p["name"]:
                found = n
                break
        if found is not None:
            used.add(found)
            _sync_fields(elements[found], _pattern_fields(p), PATTERN_DEFAULTS)
            ordered.append(elements[found])
        elif isinstance(current, AoT):
            ordered.append(_new_section(_pattern_fields(p)))
        else:
            it = tomlkit.inline_table()
            for k, v in _pattern_fields(p).items():
                if v is not None:
                    it[k] = v
            ordered.append(it)
    if [id(e) for e in ordered] == [id(e) for e in elements]:
        return
    if isinstance(current, AoT):
        # The old last element's tail introduces whatever follows the array; it stays at
        # the array's end, whichever element now ends it.
        tail = _pop_tail(elements[-1])
        while len(current):
            del current[-1]
        for n, el in enumerate(ordered):
            if n and not _ends_with_blank_line(ordered[n - 1]):
                _blank_line_before(el)
            current.append(el)
        _push_tail(ordered[-1], tail)
    else:
        while len(current):
            del current[-1]
        for el in ordered:
            current.append(el)
