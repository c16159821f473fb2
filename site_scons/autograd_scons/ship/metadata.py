"""Core metadata (a wheel's METADATA, an sdist's PKG-INFO) and a wheel's
entry_points.txt, from pyproject.toml's `[project]` table.

    check(meta, project, path)           # BuildError, one line, before anything is written
    metadata_text(meta, requires, project)
    entry_points_text(meta)              # None when the project has none

Every `[project]` field that the core metadata specification maps is
written: name, version, description, readme (a file or a text, with its
content type), requires-python, license (a text or a file; an SPDX
expression as License-Expression), authors, maintainers, keywords,
classifiers, urls, dependencies (the backend adds the torch pin) and
optional-dependencies (Provides-Extra and their Requires-Dist); scripts,
gui-scripts and entry-points go to entry_points.txt.  A field this backend
does not write (`dynamic`, `license-files`, or one it does not know) is
refused in one line, never dropped.
"""

import os
import re

from autograd_scons.buildenv.runner import BuildError

WRITTEN = ("name", "version", "description", "readme", "requires-python", "license", "authors", "maintainers",
           "keywords", "classifiers", "urls", "dependencies", "optional-dependencies", "scripts", "gui-scripts",
           "entry-points")
_README_TYPES = {".md": "text/markdown", ".markdown": "text/markdown", ".rst": "text/x-rst", ".txt": "text/plain"}
_EXTRA = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def _one_line(value) -> bool:
    return isinstance(value, str) and "\n" not in value and "\r" not in value


def _strings(value) -> bool:
    return isinstance(value, list) and all(map(_one_line, value))


def check(meta: dict, project: str, path: str) -> None:
    """Refuse, in one line naming `path` and the field, what the backend
    would have to drop or could not write as one metadata field."""
    def bad(key, what):
        raise BuildError(f"{path}: [project] {key} {what}")
    unknown = sorted(set(meta) - set(WRITTEN))
    if unknown:
        bad(unknown[0], "is not supported by autograd_scons.build_meta (it writes: "
                        f"{', '.join(WRITTEN)}); remove it, or give the value statically")
    for key in ("description", "requires-python"):
        if key in meta and not _one_line(meta[key]):
            bad(key, "must be one line of text")
    for key in ("dependencies", "keywords", "classifiers"):
        if key in meta and not _strings(meta[key]):
            bad(key, "must be a list of one-line strings")
    for key in ("authors", "maintainers"):
        for person in meta.get(key, []):
            if not (isinstance(person, dict) and set(person) <= {"name", "email"} and person
                    and all(map(_one_line, person.values()))):
                bad(key, "must be a list of tables with a one-line name and/or email")
    for key in ("urls", "scripts", "gui-scripts"):
        if key in meta and not (isinstance(meta[key], dict) and all(map(_one_line, meta[key].values()))
                                and all(map(_one_line, meta[key]))):
            bad(key, "must be a table of one-line strings")
    groups = meta.get("entry-points", {})
    if not (isinstance(groups, dict) and all(isinstance(g, dict) and all(map(_one_line, g.values()))
                                             for g in groups.values())):
        bad("entry-points", "must be a table of tables of one-line strings")
    if set(groups) & {"console_scripts", "gui_scripts"}:
        bad("entry-points", "may not hold console_scripts or gui_scripts (use [project.scripts] and gui-scripts)")
    extras = meta.get("optional-dependencies", {})
    if not (isinstance(extras, dict) and all(_strings(v) for v in extras.values())):
        bad("optional-dependencies", "must be a table of lists of one-line strings")
    for extra in extras:
        if not _EXTRA.match(_normalized(extra)):
            bad("optional-dependencies", f"has an extra named {extra!r}, not a valid extra name")
    _readme(meta, project, path)
    _license(meta, project, path)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _file_text(project: str, rel: str, key: str, path: str) -> str:
    root = os.path.abspath(project)   # (the hooks pass "."; normpath would drop its "./")
    full = os.path.normpath(os.path.join(root, rel))
    if os.path.isabs(rel) or not full.startswith(root + os.sep) or os.path.islink(full):
        raise BuildError(f"{path}: [project] {key} file {rel!r} is not a file inside the project")
    try:
        with open(full, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise BuildError(f"{path}: [project] {key} file {rel!r}: {getattr(e, 'strerror', None) or e}") from None


def _readme(meta: dict, project: str, path: str):
    """(text, content type) of the readme, or None."""
    readme = meta.get("readme")
    if readme is None:
        return None
    if isinstance(readme, str):
        readme = {"file": readme}
    if not isinstance(readme, dict) or len({"file", "text"} & set(readme)) != 1:
        raise BuildError(f"{path}: [project] readme must be a file name, or a table with `file` or `text`")
    if "file" in readme:
        text = _file_text(project, readme["file"], "readme", path)
        kind = readme.get("content-type") or _README_TYPES.get(os.path.splitext(readme["file"])[1].lower())
    else:
        text, kind = readme["text"], readme.get("content-type")
    if not _one_line(kind or ""):
        raise BuildError(f"{path}: [project] readme needs a one-line content-type (text/markdown, text/x-rst, "
                         "text/plain)")
    return text, kind or "text/plain"


def _license(meta: dict, project: str, path: str):
    """("License-Expression" or "License", its text), or None."""
    value = meta.get("license")
    if value is None:
        return None
    if isinstance(value, str):
        if not _one_line(value):
            raise BuildError(f"{path}: [project] license, an SPDX expression, must be one line")
        return "License-Expression", value
    if not isinstance(value, dict) or len({"file", "text"} & set(value)) != 1 or len(value) != 1:
        raise BuildError(f"{path}: [project] license must be an SPDX expression, or a table with `file` or `text`")
    text = value["text"] if "text" in value else _file_text(project, value["file"], "license", path)
    return "License", text


def _field(name: str, text: str) -> str:
    """A field whose value may span lines (continuation lines, indented)."""
    lines = text.strip("\n").splitlines() or [""]
    return "\n".join([f"{name}: {lines[0]}"] + [f"        {line}" for line in lines[1:]])


def _people(people) -> tuple[list[str], list[str]]:
    named = [p["name"] for p in people if "email" not in p]
    emails = [f"{p['name']} <{p['email']}>" if "name" in p else p["email"] for p in people if "email" in p]
    return ([", ".join(named)] if named else []), ([", ".join(emails)] if emails else [])


def metadata_text(meta: dict, requires, project: str = ".") -> str:
    """METADATA / PKG-INFO from a checked [project] table and the
    requirements (the torch pin among them, for a wheel)."""
    license = _license(meta, project, "pyproject.toml")
    version = "2.4" if license and license[0] == "License-Expression" else "2.1"
    lines = [f"Metadata-Version: {version}", f"Name: {meta['name']}", f"Version: {meta['version']}"]
    if meta.get("description"):
        lines.append(f"Summary: {meta['description']}")
    if meta.get("keywords"):
        lines.append(f"Keywords: {','.join(meta['keywords'])}")
    for key, (names_field, emails_field) in (("authors", ("Author", "Author-email")),
                                             ("maintainers", ("Maintainer", "Maintainer-email"))):
        names, emails = _people(meta.get(key, []))
        lines += [f"{names_field}: {n}" for n in names] + [f"{emails_field}: {e}" for e in emails]
    if license:
        lines.append(_field(*license))
    lines += [f"Classifier: {c}" for c in meta.get("classifiers", [])]
    lines += [f"Project-URL: {label}, {url}" for label, url in meta.get("urls", {}).items()]
    if meta.get("requires-python"):
        lines.append(f"Requires-Python: {meta['requires-python']}")
    lines += [f"Requires-Dist: {r}" for r in requires]
    for extra, deps in meta.get("optional-dependencies", {}).items():
        name = _normalized(extra)
        lines.append(f"Provides-Extra: {name}")
        for dep in deps:
            req, _, marker = dep.partition(";")
            condition = f'({marker.strip()}) and extra == "{name}"' if marker.strip() else f'extra == "{name}"'
            lines.append(f"Requires-Dist: {req.strip()}; {condition}")
    readme = _readme(meta, project, "pyproject.toml")
    if readme:
        lines.append(f"Description-Content-Type: {readme[1]}")
        return "\n".join(lines) + "\n\n" + readme[0]
    return "\n".join(lines) + "\n"


def entry_points_text(meta: dict):
    """entry_points.txt for the wheel's .dist-info, or None."""
    groups = {}
    if meta.get("scripts"):
        groups["console_scripts"] = meta["scripts"]
    if meta.get("gui-scripts"):
        groups["gui_scripts"] = meta["gui-scripts"]
    groups.update(meta.get("entry-points", {}))
    if not groups:
        return None
    return "\n".join(f"[{group}]\n" + "".join(f"{name} = {ref}\n" for name, ref in sorted(entries.items()))
                     for group, entries in sorted(groups.items()))
