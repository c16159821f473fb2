"""What torch's installed headers declare without defining, of the names a
formula can use: FunctionsManual.h's helpers (`torch::autograd::generated::
details`) and the members of the structs of `torch/csrc/autograd/function.h`
(`TypeAndSize::zeros`).  A name declared only there is defined in libtorch
alone: a patch whose formula calls it needs libtorch's own symbol for it
(libtorch_locals.py), and one defined inline in the header (`wrap_opt_if`)
compiles into the patch.

    declared_only(header_text, "torch::autograd::generated::details")   # {"handle_r_to_c", ...}
    declared_only(header_text, "torch::autograd", members=True)          # {"TypeAndSize::zeros", ...}

A reader of declarations, not of C++: comments, preprocessor lines and
string literals are dropped, then the statements at the scope's own level
are split on `;` and balanced braces.  A statement with a call-shaped
`name(` and no body declares `name`; one with a body defines it.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PREPROCESSOR = re.compile(r"^[ \t]*#[^\n]*(?:\\\n[^\n]*)*", re.M)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_NAME_BEFORE_PAREN = re.compile(r"(~?[A-Za-z_]\w*)\s*$")
_DATA = re.compile(r"^\s*extern\b[^;=(]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*$")
_ACCESS = re.compile(r"\b(?:public|private|protected)\s*:(?!:)")
_SCOPE_KEYWORDS = ("struct", "class", "union")
_SKIP = ("using", "typedef", "enum", "friend", "static_assert", "namespace", "public", "private", "protected")


def _clean(text: str) -> str:
    return _STRING.sub('""', _PREPROCESSOR.sub("", _COMMENT.sub(" ", text)))


def _block_after(text: str, at: int) -> tuple[int, int]:
    """(start, end) of the body of the `{` at or after `at`: between its braces."""
    start = text.index("{", at) + 1
    depth, i = 1, start
    while depth and i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return start, i - 1


def _statements(body: str):
    """(head, has_body, body) of each statement at `body`'s own level: head
    is the text before its first top-level `{` (or its `;`)."""
    i, start, parens = 0, 0, 0
    while i < len(body):
        c = body[i]
        if c == "(":
            parens += 1
        elif c == ")":
            parens -= 1
        elif c == ";" and parens == 0:
            yield body[start:i], False, ""
            start = i + 1
        elif c == "{" and parens == 0:
            inner_start, inner_end = _block_after(body, i)
            head = body[start:i]
            i = inner_end + 1
            # a struct's body ends with `};`, a function's with `}`
            rest = re.match(r"\s*;", body[i:])
            if rest:
                i += rest.end()
            yield head, True, body[inner_start:inner_end]
            start = i
            continue
        i += 1


def _first_word(head: str) -> str:
    words = re.findall(r"[A-Za-z_]\w*", re.sub(r"^\s*template\s*<[^{;]*?>", "", head))
    return words[0] if words else ""


def _declared(head: str) -> str | None:
    """The function or data name a statement's head declares, or None."""
    depth, first = 0, None
    for i, c in enumerate(head):
        if c == "(":
            if depth == 0 and first is None:
                first = i
            depth += 1
        elif c == ")":
            depth -= 1
    if first is not None:
        m = _NAME_BEFORE_PAREN.search(head[:first])
        name = m.group(1) if m else None
        return None if name is None or name.startswith("operator") or name in ("decltype", "alignas") else name
    m = _DATA.match(head)
    return m.group(1) if m else None


def _scan(body: str, prefix: str, members: bool, declared: set, defined: set) -> None:
    for head, has_body, inner in _statements(body):
        head = _ACCESS.sub(" ", head)
        word = _first_word(head)
        if word in _SCOPE_KEYWORDS:
            if members and has_body:
                m = re.search(r"\b(?:struct|class|union)\s+(?:[A-Z_]+\s+)*([A-Za-z_]\w*)\s*(?:final\s*)?(?::|$)",
                              head)
                if m:
                    _scan(inner, f"{m.group(1)}::", False, declared, defined)
            continue
        if word in _SKIP or (members and not prefix):
            continue
        name = _declared(head)
        if name is not None:
            (defined if has_body or "= default" in head or "= delete" in head else declared).add(prefix + name)


def declared_only(text: str, namespace: str, members: bool = False) -> frozenset:
    """The names declared and never defined in `namespace`'s blocks of the
    header `text`: its functions and data, or (`members`) the members of its
    structs and classes, as `Class::member`."""
    text = _clean(text)
    declared: set = set()
    defined: set = set()
    for m in re.finditer(rf"\bnamespace\s+{re.escape(namespace)}\s*\{{", text):
        start, end = _block_after(text, m.start())
        _scan(text[start:end], "", members, declared, defined)
    return frozenset(declared - defined)
