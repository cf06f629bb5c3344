"""MkDocs hook: Sphinx roles in docstrings (``:func:`x```) rendered as links, never raw.

The docstrings are numpydoc and cite other objects with Sphinx roles
(``:func:`read_ratings```, ``:class:`~nlpower.params.LMMParams```).
mkdocstrings renders them as the raw text ``:func:<code>read_ratings</code>``.
This hook, not an edit of every docstring, fixes that for the whole site:

1. ``on_page_content`` (every page, before any is written) collects the
   anchors mkdocstrings gives documented objects (``id="nlpower.x.y"``);
2. ``on_post_page`` replaces each role with a link to the object it names --
   the full path, or a relative name (``LMMParams``, ``to_coding``) matched
   to the one documented object it ends, preferring the same page -- and
   with plain code when nothing documented matches (``numpy.random...``).
   ``~`` shows the last component only, as in Sphinx.
"""

from __future__ import annotations

import html
import posixpath
import re
from typing import Any

ROLE = re.compile(r":(?:py:)?(?:func|mod|class|meth|attr|data|obj|exc|const|type):"
                  r"<code>(~?)([\w.]+?)(?:\(\))?</code>")
ANCHOR = re.compile(r'id="(nlpower(?:\.[\w]+)*)"')

#: anchor -> url of the page that holds it
_ANCHORS: dict[str, str] = {}


def on_pre_build(config: Any) -> None:
    _ANCHORS.clear()


def on_page_content(html_text: str, page: Any, config: Any, files: Any) -> str:
    for anchor in ANCHOR.findall(html_text):
        _ANCHORS.setdefault(anchor, page.url)
    return html_text


def resolve(name: str, page_url: str) -> str | None:
    """The anchor ``name`` refers to: itself, or the one documented object it ends."""
    if name in _ANCHORS:
        return name
    suffix = "." + name
    matches = [a for a in _ANCHORS if a.endswith(suffix)]
    if not matches:
        return None
    local = [a for a in matches if _ANCHORS[a] == page_url]
    pool = local or matches
    return min(pool, key=lambda a: (a.count("."), a))


def _href(anchor: str, page_url: str) -> str:
    target = _ANCHORS[anchor]
    if target == page_url:
        return f"#{anchor}"
    rel = posixpath.relpath(target or ".", page_url or ".")
    return f"{'' if rel == '.' else rel.rstrip('/') + '/'}#{anchor}"


def render(html_text: str, page_url: str) -> str:
    """``html_text`` with every role replaced by a link (or plain code)."""
    def replace(match: re.Match[str]) -> str:
        tilde, name = match.groups()
        shown = name.rsplit(".", 1)[-1] if tilde else name
        anchor = resolve(name, page_url)
        code = f"<code>{html.escape(shown)}</code>"
        if anchor is None:
            return code
        return f'<a class="autorefs" href="{_href(anchor, page_url)}">{code}</a>'

    return ROLE.sub(replace, html_text)


def on_post_page(output: str, page: Any, config: Any) -> str:
    return render(output, page.url)
