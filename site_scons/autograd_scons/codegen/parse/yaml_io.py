"""Reading the spec files: libyaml's C parser, safe construction, line numbers.

Each file is read and parsed exactly once (with the cyclic collector paused
around the parse that builds the model: gc_paused).  Entries come back with
the line they start on and the line of each of their keys, so that every
later error can say where it is.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import yaml

from autograd_scons.base.errors import SpecError

try:
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


@dataclass
class Entry:
    """One top-level list item of a spec file."""
    data: dict
    line: int                      # 1-based line of the entry
    key_lines: "KeyLines"          # 1-based line of each key, nested

    def line_of(self, *keys: str) -> int:
        """Line of a (nested) key, or of the nearest enclosing one found."""
        line, lines = self.line, self.key_lines
        for k in keys:
            if k not in lines:
                break
            line, lines = lines[k]
        return line


# key -> (line, lines of the keys of its value if that is a mapping)
KeyLines = dict


@contextmanager
def gc_paused() -> Iterator[None]:
    """Loading allocates ~10^5 long-lived, acyclic objects; the cyclic
    collector would scan them again and again for nothing (~20% of the time,
    and more the larger the specs: each full collection walks them all).
    Nestable: only the outermost one turns the collector back on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()



def read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SpecError(f"cannot read file: {e.strerror}", path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        # located as an editor shows it: the line, and the column in characters of the valid text before it
        line_start = data.rfind(b"\n", 0, e.start) + 1
        column = len(data[line_start:e.start].decode("utf-8", "replace")) + 1
        raise SpecError(f"not UTF-8 text: byte 0x{data[e.start]:02x} at column {column} ({e.reason}); save the "
                        "file as UTF-8", path, data.count(b"\n", 0, e.start) + 1) from None


def load_entries(path: str, text: str) -> list[Entry]:
    """Parse `text` (the contents of `path`) as a list of mappings."""
    _refuse_anchors(path, text)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return []
        _check_duplicate_keys(path, node)
        data = _construct(loader, node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else None
        msg = "malformed YAML: " + " ".join(filter(None, [e.context, e.problem]))
        raise SpecError(msg, path, line) from None
    except yaml.reader.ReaderError as e:   # a character YAML does not take (a NUL, a control character)
        line_start = text.rfind("\n", 0, e.position) + 1
        code = e.character if isinstance(e.character, int) else ord(e.character)   # (libyaml's: an int)
        raise SpecError(f"malformed YAML: character 0x{code:02x} at column {e.position - line_start + 1} is not "
                        "allowed (a control character)", path, text.count("\n", 0, e.position) + 1) from None
    except yaml.YAMLError as e:
        raise SpecError(f"malformed YAML: {e}", path) from None
    finally:
        loader.dispose()
    if not isinstance(data, list):
        raise SpecError("expected a list of entries at the top level", path, node.start_mark.line + 1)
    entries = []
    for item_node, item in zip(node.value, data):
        line = item_node.start_mark.line + 1
        if not isinstance(item, dict):
            raise SpecError("expected a mapping (key: value) entry", path, line)
        entries.append(Entry(item, line, _key_lines(item_node)))
    return entries


def _refuse_anchors(path: str, text: str) -> None:
    """Spec files never need anchors or aliases, and nested aliases expand
    exponentially (a few hundred bytes can stand for 10^9 nodes, which every
    walk over the entries would visit).  An alias needs an anchor, so it is
    enough to look at each `&`: real specs have a handful, in formulas and
    comments (`&&`, `Tensor & x`).  Only one followed by a character that
    could start an anchor name (libyaml takes `[0-9A-Za-z_-]`; this takes
    more, in case a parser takes more) costs a second parse, as events, to
    see whether it really is one."""
    i = text.find("&")
    while i != -1:
        after = text[i + 1:i + 2]
        if after and not after.isspace() and after != "&":
            break
        i = text.find("&", i + 1)
    else:
        return
    try:
        for event in yaml.parse(text, Loader=_Loader):
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                sigil = "*" if isinstance(event, yaml.AliasEvent) else "&"
                raise SpecError(f"'{sigil}{anchor}': anchors and aliases are not allowed in spec files",
                                path, event.start_mark.line + 1)
    except yaml.YAMLError:
        return  # load_entries reports it, located


def _key_lines(node: Any) -> KeyLines:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): (k.start_mark.line + 1, _key_lines(v)) for k, v in node.value}


_STR = "tag:yaml.org,2002:str"
_BOOL = "tag:yaml.org,2002:bool"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


def _construct(loader: Any, node: Any) -> Any:
    """Build Python values from the composed nodes.  Strings, lists and plain
    mappings (nearly everything in these files) are built here, which is much
    faster than PyYAML's generic constructor; other tags go to it."""
    tag = node.tag
    if tag == _STR:
        return node.value
    if tag == _MAP and not any(k.tag == "tag:yaml.org,2002:merge" for k, _ in node.value):
        return {_construct(loader, k): _construct(loader, v) for k, v in node.value}
    if tag == _SEQ:
        return [_construct(loader, v) for v in node.value]
    if tag == _BOOL:
        return node.value.lower() in ("yes", "true", "on")
    return loader.construct_object(node, deep=True)


def _check_duplicate_keys(path: str, node: Any) -> None:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.MappingNode):
            seen: set = set()
            for k, v in n.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in seen:
                        raise SpecError(f"duplicate key '{k.value}' in a mapping", path,
                                        k.start_mark.line + 1)
                    seen.add(k.value)
                stack.append(v)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
