"""A griffe extension for the API reference: the package's docstrings are Google style with
a few reStructuredText habits, which Markdown would show raw. On every docstring:

- Sphinx roles (``:class:`GraphRAGIndex```, ``:func:`~pkg.mod.name```) become code spans
  (``~`` keeps the last dotted part, as Sphinx shows it);
- doctest blocks (lines from ``>>>`` to the next blank line) are fenced as ``pycon``;
- a literal block (a paragraph ending in ``::``, then an indented block) is fenced as
  ``python`` and the paragraph ends in ``:``.

Only the rendering changes: the docstrings in the code stay as they are (the doctests run).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(1).strip()
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def rewrite(text: str) -> str:
    """The docstring ``text`` in Markdown (see the module docstring)."""
    lines = ROLE.sub(_role, text).split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(">>>"):
            pad = " " * _indent(line)
            out.append(f"{pad}```pycon")
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out.append(f"{pad}```")
            continue
        if stripped.endswith("::") and i + 2 < len(lines) and not lines[i + 1].strip():
            body_start = i + 2
            base = _indent(line)
            inner = _indent(lines[body_start])
            if lines[body_start].strip() and inner > base:
                j = body_start
                while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > base):
                    j += 1
                while j > body_start and not lines[j - 1].strip():
                    j -= 1
                pad = " " * base
                out.append(line[: len(line.rstrip()) - 1])  # "Example::" -> "Example:"
                out.append("")
                out.append(f"{pad}```python")
                out.extend(pad + ln[inner:] if ln.strip() else "" for ln in lines[body_start:j])
                out.append(f"{pad}```")
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


class RstToMarkdown(griffe.Extension):
    """Rewrites each docstring once, when griffe creates its object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
