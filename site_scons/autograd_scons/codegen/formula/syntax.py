"""The formula language as derivatives.yaml writes it (C++ expressions), read
into a tree: a tokenizer, frozen-dataclass nodes, and a recursive-descent
parser with C++'s precedence.  Every node keeps its column (0-based) in the
formula so that a refusal can point at it.  Nothing here knows Python: the
translation is translate.py's.

What parses (and what the nodes hold) is what derivatives.yaml uses; a lambda,
an assignment, or a `<` that opens template arguments of a name not known to
take them are errors here, naming the construct and its column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

from autograd_scons.base.errors import FormulaError

# --------------------------------------------------------------- tokens

# One regex for tokens, none for structure: numbers (with C suffixes),
# strings, words, then the punctuators, longest first.
_TOKEN = re.compile(r"""
    (?P<space>\s+|/\*.*?\*/|//[^\n]*)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFlLuU]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<word>[A-Za-z_]\w*)
  | (?P<punct>::|->|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>!~?:,.()\[\]{}&|^=;])
""", re.VERBOSE)


@dataclass(frozen=True)
class Token:
    kind: str    # number, string, word, punct, end
    text: str
    col: int


def tokenize(text: str) -> list[Token]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise FormulaError(f"unexpected character {text[pos]!r} at column {pos + 1}")
        if m.lastgroup != "space":
            out.append(Token(m.lastgroup or "", m.group(), pos))
        pos = m.end()
    out.append(Token("end", "", len(text)))
    return out


# ---------------------------------------------------------------- nodes


@dataclass(frozen=True)
class Name:
    """`grad`, `at::sum`, `std::vector<c10::SymInt>`: a possibly qualified
    name, with the template arguments (as type texts) it was written with."""
    col: int
    parts: tuple[str, ...]
    template: Optional[tuple[str, ...]] = None

    @property
    def text(self) -> str:
        return "::".join(self.parts)


@dataclass(frozen=True)
class Number:
    col: int
    text: str        # as written, C suffixes removed
    is_int: bool


@dataclass(frozen=True)
class String:
    col: int
    value: str


@dataclass(frozen=True)
class Call:
    col: int
    fn: "Node"       # a Name, or a Member (a method call)
    args: tuple["Node", ...]


@dataclass(frozen=True)
class Member:
    """`obj.name` (arrow False) or `obj->name` (arrow True)."""
    col: int
    obj: "Node"
    name: str
    arrow: bool


@dataclass(frozen=True)
class Index:
    col: int
    obj: "Node"
    index: "Node"


@dataclass(frozen=True)
class Conditional:
    col: int
    test: "Node"
    then: "Node"
    orelse: "Node"


@dataclass(frozen=True)
class Binary:
    col: int
    op: str
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Unary:
    col: int
    op: str
    operand: "Node"


@dataclass(frozen=True)
class Cast:
    """`static_cast<T>(x)` or `(T)x`."""
    col: int
    type: str
    operand: "Node"


@dataclass(frozen=True)
class Braces:
    """`{a, b}`: an initializer list."""
    col: int
    items: tuple["Node", ...]


Node = Union[Name, Number, String, Call, Member, Index, Conditional, Binary, Unary, Cast, Braces]

# Binary operators by precedence level, loosest first (C++'s order).
_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
    ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

# Names whose `<` opens template arguments; any other name's `<` is less-than.
TEMPLATE_NAMES = frozenset([
    "std::vector", "std::tuple", "std::get", "std::optional", "c10::optional", "std::array",
    "at::OptionalArrayRef", "c10::OptionalArrayRef", "at::ArrayRef", "c10::ArrayRef", "c10::SmallVector",
    "std::numeric_limits", "static_cast", "std::make_tuple", "c10::fmap", "fmap"])
# Types a C-style cast `(T)x` may name.
CAST_TYPES = frozenset(["double", "float", "int", "int64_t", "bool", "long"])


class Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = tokenize(text)
        self.i = 0

    # -- helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, what: str, tok: Optional[Token] = None) -> FormulaError:
        t = tok or self.tok
        return FormulaError(f"{what} at column {t.col + 1} of '{self.text}'")

    def expect(self, text: str, opened: Optional[Token] = None) -> Token:
        if self.tok.text != text or self.tok.kind not in ("punct",):
            if opened is not None:
                return self._unbalanced(text, opened)
            found = self.tok.text or "the end"
            raise self.error(f"expected '{text}', found '{found}'")
        return self.next()

    def _unbalanced(self, closer: str, opened: Token):
        found = self.tok.text or "the end"
        raise self.error(f"'{opened.text}' opened at column {opened.col + 1} is not closed by '{closer}' "
                         f"(found '{found}')")

    # -- grammar
    def parse(self) -> Node:
        node = self.expression()
        if self.tok.kind != "end":
            if self.tok.text in (")", "]", "}"):
                raise self.error(f"unbalanced '{self.tok.text}'")
            if self.tok.text == "=":
                raise self.error("assignment is not an expression a formula may use")
            if self.tok.text == ";":
                raise self.error("a statement (';') is not a formula")
            raise self.error(f"unexpected '{self.tok.text}'")
        return node

    def expression(self) -> Node:
        test = self.binary(0)
        if self.tok.text == "?":
            q = self.next()
            then = self.expression()
            self.expect(":")
            orelse = self.expression()   # right-associative
            return Conditional(q.col, test, then, orelse)
        return test

    def binary(self, level: int) -> Node:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.tok.kind == "punct" and self.tok.text in _LEVELS[level]:
            op = self.next()
            right = self.binary(level + 1)
            left = Binary(op.col, op.text, left, right)
        return left

    def unary(self) -> Node:
        t = self.tok
        if t.kind == "punct" and t.text in ("-", "+", "!", "~"):
            self.next()
            return Unary(t.col, t.text, self.unary())
        if t.kind == "punct" and t.text == "(" and self._c_cast():
            self.next()
            type_ = self.next().text
            self.expect(")")
            return Cast(t.col, type_, self.unary())
        if t.kind == "punct" and t.text in ("&", "*"):
            raise self.error(f"pointer operator '{t.text}' (address-of / dereference)")
        return self.postfix(self.primary())

    def _c_cast(self) -> bool:
        a, b = self.toks[self.i + 1], self.toks[self.i + 2]
        return a.kind == "word" and a.text in CAST_TYPES and b.text == ")"

    def postfix(self, node: Node) -> Node:
        while True:
            t = self.tok
            if t.text == "(" and t.kind == "punct":
                self.next()
                node = Call(t.col, node, self.arguments(")", t))
            elif t.text in (".", "->") and t.kind == "punct":
                self.next()
                name = self.next()
                if name.kind != "word":
                    raise self.error(f"expected a member name after '{t.text}'", name)
                if self.tok.text == "<" and name.text == "template":
                    raise self.error("'.template' member call")
                node = Member(name.col, node, name.text, t.text == "->")
            elif t.text == "[" and t.kind == "punct":
                self.next()
                index = self.expression()
                self.expect("]", t)
                node = Index(t.col, node, index)
            else:
                return node

    def arguments(self, closer: str, opened: Token) -> tuple[Node, ...]:
        args: list[Node] = []
        if self.tok.text == closer:
            self.next()
            return ()
        while True:
            args.append(self.expression())
            if self.tok.text == ",":
                self.next()
                continue
            if self.tok.text == closer:
                self.next()
                return tuple(args)
            self._unbalanced(closer, opened)

    def primary(self) -> Node:
        t = self.tok
        if t.kind == "number":
            self.next()
            text = t.text.rstrip("fFlLuU")
            is_int = not any(c in text for c in ".eE")
            return Number(t.col, text, is_int)
        if t.kind == "string":
            self.next()
            return String(t.col, bytes(t.text[1:-1], "utf-8").decode("unicode_escape"))
        if t.kind == "word" or (t.kind == "punct" and t.text == "::"):
            return self.name()
        if t.text == "(":
            self.next()
            inner = self.expression()
            self.expect(")", t)
            return inner
        if t.text == "{":
            self.next()
            return Braces(t.col, self.arguments("}", t))
        if t.text == "[":
            raise self.error("a lambda ('[...](...){...}')")
        if t.kind == "end":
            raise self.error("the formula ends where an expression is expected")
        raise self.error(f"unexpected '{t.text}'")

    def name(self) -> Node:
        start = self.tok
        parts: list[str] = []
        if start.text == "::":
            self.next()
        while True:
            w = self.next()
            if w.kind != "word":
                raise self.error("expected a name", w)
            parts.append(w.text)
            if self.tok.text == "::":
                self.next()
                continue
            break
        text = "::".join(parts)
        template = None
        if self.tok.text == "<" and text in TEMPLATE_NAMES:
            template = self.template_args()
            if self.tok.text == "::":   # std::numeric_limits<double>::infinity
                self.next()
                rest = self.name()
                assert isinstance(rest, Name)
                return Name(start.col, tuple(parts) + rest.parts, template)
        return Name(start.col, tuple(parts), template)

    def template_args(self) -> tuple[str, ...]:
        """`<T, U<V>>` as type texts ('>>' closes two)."""
        opened = self.next()
        args, depth, cur = [], 1, ""
        while True:
            t = self.next()
            if t.kind == "end":
                self._unbalanced(">", opened)
            closes = {">": 1, ">>": 2}.get(t.text, 0) if t.kind == "punct" else 0
            if t.text == "<":
                depth += 1
            if closes:
                if depth - closes < 0:
                    raise self.error("'>>' closes more template arguments than were opened", t)
                depth -= closes
                if depth == 0:
                    cur += ">" * (closes - 1)
                    args.append(cur.strip())
                    return tuple(args)
            if t.text == "," and depth == 1:
                args.append(cur.strip())
                cur = ""
                continue
            cur += (" " if t.kind == "word" and cur and cur[-1].isalnum() else "") + t.text


def parse(formula: str) -> Node:
    """The tree of one formula; FormulaError (with the column) if it does not parse."""
    return Parser(formula).parse()
